// When no server answers at GANTRY_HOST, `create` (like run and pull) starts `gantry serve` in the background, says so
// on stderr, and leaves it running for the next commands.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { tinyModelPath } from "../../support/models.ts";
import { freePort } from "../../support/server.ts";
import { runCli, runOk } from "./run-cli.ts";

let pid: number | null = null;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cli-autostart-"));

const alive = (p: number): boolean => {
  try {
    process.kill(p, 0);
    return true;
  } catch {
    return false;
  }
};

after(async () => {
  if (pid !== null && alive(pid)) {
    process.kill(pid, "SIGTERM");
    const deadline = Date.now() + 15_000;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (alive(pid)) process.kill(pid, "SIGKILL");
  }
  fs.rmSync(work, { recursive: true, force: true });
});

test("create starts a background server when none answers; later commands use it", async () => {
  const port = await freePort();
  const models = path.join(work, "store", "models");
  const env = { GANTRY_HOST: `127.0.0.1:${port}`, GANTRY_MODELS: models, GANTRY_THREADS: "2" };
  fs.copyFileSync(await tinyModelPath({ controlLogit: -8 }), path.join(work, "model.gguf"));
  fs.writeFileSync(path.join(work, "Modelfile"), "FROM ./model.gguf\nPARAMETER num_predict 8\n");

  // list never starts a server: it only reports that none answers.
  const before = await runCli(["list"], { env, cwd: work });
  assert.equal(before.code, 1);
  assert.match(before.stderr, /could not connect/);

  const r = await runOk(["create", "auto", "-f", "Modelfile"], { env, cwd: work });
  const m = /started gantry server in the background \(pid (\d+), log (.+)\)\n/.exec(r.stderr);
  assert.ok(m, r.stderr);
  pid = Number(m[1]);
  const log = path.join(work, "store", "logs", "server.log");
  assert.equal(m[2], log, "the log sits next to the model store");
  assert.match(r.stderr, /success\n$/);
  assert.ok(alive(pid), "the server outlives the command");
  assert.match(fs.readFileSync(log, "utf8"), /gantry serve listening/);

  // The next commands find the running server and start no other.
  const run = await runOk(["run", "auto", "hi"], { env, cwd: work });
  assert.ok(!run.stderr.includes("started gantry server"), run.stderr);
  assert.ok(run.stdout.length > 1);
  assert.match((await runOk(["list"], { env, cwd: work })).stdout, /\nauto:latest /);
});
