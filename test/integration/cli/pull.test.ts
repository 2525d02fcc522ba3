// `gantry pull` and `gantry run` of a hub model that is not there yet, against a local Hugging Face-style hub.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";
import { runCli, runOk, type CliOptions } from "./run-cli.ts";

let hub: HubServer;
let server: TestServer;
let cli: CliOptions;

before(async () => {
  hub = await startHubServer();
  // The default tiny model ends its answers by itself, so `run` needs no num_predict.
  const tiny = await tinyModelPath();
  await hub.register({ org: "acme", repo: "tiny-GGUF", files: { "tiny-Q4_K_M.gguf": tiny, "tiny-Q8_0.gguf": tiny } });
  // A repo `params` file keeps the answers short.
  await hub.register({
    org: "acme",
    repo: "other-GGUF",
    files: { "other-Q4_K_M.gguf": tiny, params: Buffer.from(JSON.stringify({ num_predict: 8 })) },
  });
  server = await startTestServer({ env: { GANTRY_HUB_URL: hub.url } });
  cli = { env: { GANTRY_HOST: `127.0.0.1:${server.port}`, GANTRY_MODELS: server.modelsDir } };
});

after(async () => {
  await server?.stop();
  await hub?.close();
});

test("pull shows each status once and the download's bar at its start and end, then success", async () => {
  const r = await runOk(["pull", "hf.co/acme/tiny-GGUF:q8_0"], cli);
  const lines = r.stderr.trimEnd().split("\n");
  const digest = hub.sha256("acme", "tiny-GGUF", "tiny-Q8_0.gguf").slice(0, 12);
  assert.equal(lines[0], "pulling manifest");
  const bars = lines.filter((l) => l.startsWith(`pulling ${digest}: `));
  assert.ok(
    bars.length >= 1 && bars.length <= 2,
    `one bar line at the start and one at the end, not one per chunk:\n${r.stderr}`,
  );
  assert.match(bars[bars.length - 1]!, /: 100% ▕█+▏ \d+(\.\d+)? KB$/);
  assert.equal(lines[lines.length - 1], "success");
  assert.ok(lines.includes("verifying sha256 digest") && lines.includes("writing manifest"), r.stderr);
  assert.equal(new Set(lines).size, lines.length, "no line printed twice");
  assert.match((await runOk(["list"], cli)).stdout, /\nhf\.co\/acme\/tiny-GGUF:q8_0\s+[0-9a-f]{12}\s/i);
});

test("run of a hub model that is not there pulls it first, then answers", async () => {
  const r = await runOk(["run", "hf.co/acme/other-GGUF", "hello"], cli);
  assert.match(r.stderr, /^pulling manifest\n/);
  assert.match(r.stderr, /\nsuccess\n/);
  assert.ok(r.stdout.endsWith("\n"));
  // Now present: a second run pulls nothing.
  const again = await runOk(["run", "hf.co/acme/other-GGUF", "hello"], cli);
  assert.ok(!again.stderr.includes("pulling manifest"), again.stderr);
});

test("a repo the hub does not have is one error line naming it", async () => {
  const r = await runCli(["pull", "hf.co/acme/missing-GGUF"], cli);
  assert.equal(r.code, 1);
  const lines = r.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^Error: .*acme\/missing-GGUF/);
});

test("prepare: processes pulling one model into one store at once (replicas starting together) take turns; one download", async () => {
  await hub.register({ org: "acme", repo: "shared-GGUF", files: { "shared-Q8_0.gguf": await tinyModelPath() } });
  // About 4 s of download: the three processes are all started well before it ends, even on a loaded machine.
  hub.fault("acme", "shared-GGUF", "shared-Q8_0.gguf", { bytesPerSecond: 200_000, times: Infinity });
  const models = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-shared-volume-"));
  const env = { GANTRY_HUB_URL: hub.url, GANTRY_MODELS: models };
  const reports = [0, 1, 2].map((i) => path.join(models, `report-${i}.json`));
  const runs = await Promise.all(
    reports.map((report) => runCli(["prepare", "hf.co/acme/shared-GGUF:Q8_0", "--report", report], { env })),
  );
  hub.fault("acme", "shared-GGUF", "shared-Q8_0.gguf", null);
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
  const downloads = hub.requests.filter((q) => q.file === "shared-Q8_0.gguf" && q.method === "GET" && q.bytes > 0);
  assert.equal(downloads.length, 1, "one process pulled, the others found the model in place");
  assert.ok(
    runs.some(
      (r) => r.stdout.includes("another process is pulling") || r.stderr.includes("another process is pulling"),
    ),
    "a waiter says why it waits",
  );
  const digest = `sha256:${hub.sha256("acme", "shared-GGUF", "shared-Q8_0.gguf")}`;
  for (const report of reports)
    assert.equal((JSON.parse(fs.readFileSync(report, "utf8")) as { digest: string }).digest, digest);
  assert.deepEqual(fs.readdirSync(path.join(models, "locks")), [], "no lock left behind");
});
