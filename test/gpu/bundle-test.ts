// `npm run test:bundle`: the GPU bundle is complete. Makes it (`npm run gpu:bundle`), copies what the device tool would
// send (the tracked files and the untracked ones git does not ignore) and the bundle into a fresh folder, and runs the
// bundle's run.sh there on the CPU (--quick --gpu off) the way a GPU machine would: no network (a new network
// namespace with only loopback) and no Node (every node, npm and npx on PATH hidden by a bind mount in a new mount
// namespace; so root with unshare). The patched engine is built cold from the bundle; llama.cpp's tools and the models
// come from $GANTRY_CACHE, shared with the rest of the tests. Passes when every phase of the run passed.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseEnv } from "../../server/common/config.ts";
import { SetupEnvSchema } from "../../server/setup/config.ts";
import { which } from "../../server/setup/llama-source.ts";
import { DEFAULT_BUNDLE, makeBundle, MAX_BUNDLE_BYTES, REPO } from "./bundle.ts";
import type { PhaseResult } from "./phases.ts";
import { LLAMA_BACKEND_SAMPLING } from "../bench/llama-cpp/backend-sampling.ts";

const started = performance.now();
const seconds = () => Math.round((performance.now() - started) / 1000);
const say = (msg: string) => console.log(`test:bundle: ${msg} (${seconds()} s)`);

if (process.getuid?.() !== 0 || !which(process.env.PATH ?? "", "unshare"))
  throw new Error("test:bundle runs the bundle without network or Node in new namespaces: it needs root and unshare");

const manifest = await makeBundle(DEFAULT_BUNDLE);
say(`bundle ${(manifest.totalBytes / 2 ** 20).toFixed(1)} MiB in ${DEFAULT_BUNDLE}`);
if (manifest.totalBytes > MAX_BUNDLE_BYTES) throw new Error(`the bundle is over ${MAX_BUNDLE_BYTES / 2 ** 20} MiB`);

// What the device tool sends: the working tree's tracked and untracked-not-ignored files, and the carried bundle.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bundle-test-"));
const tree = path.join(root, "tree");
const out = path.join(root, "out");
fs.mkdirSync(tree);
const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO })
  .toString()
  .split("\0")
  .filter((f) => f && fs.existsSync(path.join(REPO, f)));
for (const f of files) fs.cpSync(path.join(REPO, f), path.join(tree, f), { recursive: false, verbatimSymlinks: true });
fs.cpSync(DEFAULT_BUNDLE, path.join(tree, ".gpu-bundle"), { recursive: true });
say(`copied ${files.length} files and the bundle into ${tree}`);

// No Node: every node, npm, npx, corepack on PATH is replaced by a script that fails, and PATH loses setup's Node.
const nodeDir = path.dirname(process.execPath);
const cleanPath = (process.env.PATH ?? "")
  .split(":")
  .filter((d) => d && path.resolve(d) !== nodeDir)
  .join(":");
const noNode = path.join(root, "no-node.sh");
fs.writeFileSync(
  noNode,
  '#!/bin/sh\necho "node/npm are hidden in the bundle test: run.sh must use the bundle\'s Node" >&2\nexit 127\n',
);
fs.chmodSync(noNode, 0o755);
const hide = ["node", "nodejs", "npm", "npx", "corepack"].flatMap((n) =>
  cleanPath
    .split(":")
    .map((d) => path.join(d, n))
    .filter((p) => fs.existsSync(p)),
);
const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
const script = [
  "set -e",
  "if command -v ip >/dev/null; then ip link set lo up; else ifconfig lo up; fi",
  ...hide.map((p) => `mount --bind ${q(noNode)} ${q(p)}`),
  "if command -v node >/dev/null && node --version >/dev/null 2>&1; then echo 'node is still reachable' >&2; exit 1; fi",
  "if curl -s -m 5 -o /dev/null https://registry.npmjs.org 2>/dev/null; then echo 'the network is still reachable' >&2; exit 1; fi",
  `cd ${q(tree)}`,
  `exec bash .gpu-bundle/run.sh --quick --gpu off --out ${q(out)}`,
].join("\n");
// The engine is built cold from the bundle, as on a GPU machine (the addon from the bundle's llama.cpp source and
// dependencies: about 145 CPU-seconds); llama.cpp's tools and the models come from the shared cache.
const shared = parseEnv(SetupEnvSchema).GANTRY_CACHE;
const cache = path.join(root, "cache");
fs.mkdirSync(cache);
for (const d of ["llama.cpp", "test-models"]) {
  fs.mkdirSync(path.join(shared, d), { recursive: true });
  fs.symlinkSync(path.join(shared, d), path.join(cache, d));
}
const env = {
  ...process.env,
  PATH: cleanPath,
  GANTRY_CACHE: cache,
  GANTRY_GPU_WORK: path.join(root, "work"),
  OUT: out,
};
say(`running run.sh --quick --gpu off with no network and no Node (hidden: ${hide.join(", ") || "none on PATH"})`);
const code = await new Promise<number>((resolve) => {
  const child = spawn("unshare", ["--mount", "--net", "bash", "-c", script], { env, stdio: "inherit" });
  child.once("close", (c) => resolve(c ?? 1));
});
const summaryFile = path.join(out, "summary.json");
const phases = fs.existsSync(summaryFile)
  ? (JSON.parse(fs.readFileSync(summaryFile, "utf8")) as { phases: PhaseResult[] }).phases
  : [];
const failed = phases.filter((p) => p.status !== "ok").map((p) => p.name);
const expected = ["preflight", "build", "models", "serve", "tests", "bench"];
const missing = expected.filter((n) => !phases.some((p) => p.name === n));
// The bench's tables include llama-server with backend sampling (decision 0027), measured beside the rest.
const benchFile = path.join(out, "bench.md");
if (phases.some((p) => p.name === "bench" && p.status === "ok")) {
  const bench = fs.existsSync(benchFile) ? fs.readFileSync(benchFile, "utf8") : "";
  const header = bench.split("\n").some((l) => l.split("|").some((cell) => cell.trim() === LLAMA_BACKEND_SAMPLING));
  if (!header) failed.push("bench (no backend-sampling table in bench.md)");
}
console.log(
  `\ntest:bundle: run.sh exited ${code}; phases: ${phases.map((p) => `${p.name} ${p.status} ${p.seconds} s`).join(", ")}`,
);
if (code !== 0 || failed.length > 0 || missing.length > 0) {
  console.error(
    `test:bundle FAILED: ${[...failed.map((n) => `${n} failed`), ...missing.map((n) => `${n} did not run`)].join(", ") || `exit ${code}`}; logs in ${out}`,
  );
  process.exitCode = 1;
} else {
  say(`passed; the run's files are in ${out}`);
  for (const d of ["tree", "work", "cache"]) fs.rmSync(path.join(root, d), { recursive: true, force: true });
}
