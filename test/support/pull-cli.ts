// A puller process for tests: `node test/support/pull-cli.ts <store dir> <hub url> <model ref> [tuning JSON]`.
// Pulls into the store and prints each progress line as NDJSON; exits 1 with {"error"} on failure. Tests kill it
// mid-download (kill -9) and start another one to check that the pull resumes from the partial file.
import { pullModel } from "../../server/hub/pull.ts";
import { ModelStore } from "../../server/store/model-store.ts";

const [root, hubUrl, ref, tuning] = process.argv.slice(2);
if (!root || !hubUrl || !ref) {
  console.error("usage: pull-cli.ts <store dir> <hub url> <model ref> [tuning JSON]");
  process.exit(2);
}
try {
  await pullModel(ref, {
    store: new ModelStore({ root }),
    hubUrl,
    token: process.env.HF_TOKEN,
    onProgress: (p) => process.stdout.write(JSON.stringify(p) + "\n"),
    ...(tuning ? { tuning: JSON.parse(tuning) as object } : {}),
  });
} catch (e) {
  process.stdout.write(JSON.stringify({ error: (e as Error).message }) + "\n");
  process.exitCode = 1;
}
