// Two first-time setups at once on an empty cache (two `npm start` / `npm test` on a fresh machine): the real
// server/setup/env.sh, twice in parallel, with the machine's older Node first on PATH, so both reach the Node 24
// install. One installs, the other waits for it, and both run their task on a Node 24 that stays in place.
// Scope: the Node install really runs (from the npm registry, through the local npm cache); the npm dependencies step
// finds this checkout's node_modules current (its install runs under its own lock, tested in
// test/unit/server/setup/dir-lock-sh.test.ts); the engine step finds an already-built patched addon, linked into the
// empty cache from the real one, so no engine is rebuilt here.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { linkLocalBuild, patchedBuild, readBuildStatus } from "../../../server/engine/native/patched-build.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { REPO } from "../../support/server.ts";

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "concurrent-setup-"));
const realBuild = patchedBuild(testEngineBuild());
after(() => {
  // The setups linked node-llama-cpp's localBuilds folder to the scratch cache: point it back at the real one.
  linkLocalBuild(realBuild);
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A directory on PATH whose `node` is older than 24 (the machine's own), or undefined. */
function olderNodeDir(): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), "/usr/local/bin", "/usr/bin"];
  for (const dir of dirs) {
    const node = path.join(dir, "node");
    if (!dir || !fs.existsSync(node)) continue;
    const r = spawnSync(node, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" });
    if (r.status === 0 && Number(r.stdout.trim()) < 24) return dir;
  }
  return undefined;
}

/** Runs `bash server/setup/env.sh node <script>`; resolves with its exit code and everything it printed. */
function setup(env: NodeJS.ProcessEnv, script: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const proc = spawn("bash", [path.join(REPO, "server", "setup", "env.sh"), "node", "-e", script], {
      cwd: REPO,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.once("close", (code) => resolve({ code, out }));
  });
}

test("two setups at once on an empty cache install Node 24 once, and neither loses its Node under it", async () => {
  const oldNode = olderNodeDir();
  assert.ok(
    oldNode,
    "this test needs the machine's own Node (older than 24) on PATH or in /usr/bin, as a fresh machine has",
  );
  assert.equal(readBuildStatus(realBuild)?.state, "built", "setup builds the patched addon before the tests run");

  const cache = path.join(scratch, "cache");
  fs.mkdirSync(path.join(cache, "engine"), { recursive: true });
  fs.symlinkSync(realBuild.dir, path.join(cache, "engine", realBuild.key), "dir");

  // PATH as on a fresh machine: no Node 24 from a cache, the machine's older Node first.
  const pathDirs = (process.env.PATH ?? "").split(path.delimiter).filter((d) => d && !d.includes("node24"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GANTRY_CACHE: cache,
    PATH: [oldNode, ...pathDirs].join(path.delimiter),
  };
  // The task keeps using its Node for a while, spawning it again at the end: a setup that replaced or removed the
  // Node 24 install under it (the race this guards against) makes that fail.
  const task = `setTimeout(() => {
    require("node:child_process").execFileSync(process.execPath, ["-e", "0"]);
    console.log("TASK " + JSON.stringify({ version: process.version, execPath: process.execPath }));
  }, 4000);`;
  const runs = await Promise.all([setup(env, task), setup(env, task)]);

  const node24 = path.join(cache, "node24", "node_modules", "node", "bin", "node");
  for (const [i, r] of runs.entries()) {
    assert.equal(r.code, 0, `setup ${i + 1} failed:\n${r.out}`);
    const line = r.out.split("\n").find((l) => l.startsWith("TASK "));
    assert.ok(line, `setup ${i + 1} did not run its task:\n${r.out}`);
    const ran = JSON.parse(line.slice("TASK ".length)) as { version: string; execPath: string };
    assert.match(ran.version, /^v2[4-9]\.|^v[3-9]\d\./);
    assert.equal(fs.realpathSync(ran.execPath), fs.realpathSync(node24));
    assert.match(r.out, /engine: patched addon ready, cached/);
  }
  const installs = runs.filter((r) => /installing node@24/.test(r.out)).length;
  assert.equal(installs, 1, `exactly one setup installs Node 24:\n${runs.map((r) => r.out).join("\n----\n")}`);
  assert.ok(
    runs.some((r) => /waiting for another setup/.test(r.out)),
    "the other one waited for it",
  );
  // Nothing half-done is left: no temp install, no lock.
  assert.deepEqual(
    fs.readdirSync(cache).sort(),
    ["engine", "node24"],
    `left in the cache: ${fs.readdirSync(cache).join(", ")}`,
  );
  assert.equal(spawnSync(node24, ["-p", "1+1"], { encoding: "utf8" }).stdout.trim(), "2");
});
