// server/setup/dir-lock.sh: the shell side of the setup's lock (the Node install and npm install steps of env.sh), with
// server/common/dir-lock.ts's protocol, so shell and Node holders of one lock exclude each other.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { withDirLock } from "../../../../server/common/dir-lock.ts";
import { REPO } from "../../../support/server.ts";

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dir-lock-sh-"));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));
let n = 0;
const fresh = () => path.join(scratch, String(n++));

/** `with_dir_lock <lock> bash -c <body>` in a new bash; resolves with its exit code and output. */
function shellHolder(lock: string, body: string): Promise<{ code: number | null; out: string }> {
  const script = `source ${JSON.stringify(path.join(REPO, "server", "setup", "dir-lock.sh"))}
with_dir_lock "$1" bash -c "$2"`;
  return new Promise((resolve) => {
    const proc = spawn("bash", ["-c", script, "holder", lock, body], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.once("close", (code) => resolve({ code, out }));
  });
}

/** Holders append "<name> in" and "<name> out" around a pause: one at a time means strictly alternating lines. */
const critical = (events: string, name: string) =>
  `echo "${name} in" >> ${JSON.stringify(events)}; sleep 0.3; echo "${name} out" >> ${JSON.stringify(events)}`;

function assertOneAtATime(events: string, holders: number): void {
  const lines = fs.readFileSync(events, "utf8").trim().split("\n");
  assert.equal(lines.length, 2 * holders, lines.join("\n"));
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i]!.replace(/ in$/, "");
    assert.deepEqual([lines[i], lines[i + 1]], [`${name} in`, `${name} out`], lines.join("\n"));
  }
}

test("shell holders and a Node holder of one lock run one at a time, and the lock is gone afterwards", async () => {
  const dir = fresh();
  const lock = path.join(dir, "sub", "x.lock");
  const events = path.join(scratch, `events-${n}`);
  const node = withDirLock(
    lock,
    async () => {
      fs.appendFileSync(events, "node in\n");
      await new Promise((r) => setTimeout(r, 300));
      fs.appendFileSync(events, "node out\n");
    },
    { pollMs: 50 },
  );
  const shells = await Promise.all([
    shellHolder(lock, critical(events, "a")),
    shellHolder(lock, critical(events, "b")),
  ]);
  await node;
  for (const s of shells) assert.equal(s.code, 0, s.out);
  assertOneAtATime(events, 3);
  assert.ok(
    shells.some((s) => /waiting for another setup \(lock .*x\.lock, held by pid \d+\)/.test(s.out)),
    shells.map((s) => s.out).join("\n"),
  );
  assert.equal(fs.existsSync(lock), false);
});

test("a lock left by a dead process is taken over by exactly one of several waiters at a time", async () => {
  const lock = path.join(fresh(), "x.lock");
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "pid"), "2147483646"); // no such process
  const events = path.join(scratch, `events-${n}`);
  const shells = await Promise.all(["a", "b", "c", "d"].map((name) => shellHolder(lock, critical(events, name))));
  for (const s of shells) assert.equal(s.code, 0, s.out);
  assertOneAtATime(events, 4);
  assert.equal(fs.existsSync(lock), false);
  assert.equal(fs.existsSync(`${lock}.break`), false);
});

test("a failing command releases the lock and its exit code is returned", async () => {
  const lock = path.join(fresh(), "x.lock");
  const r = await shellHolder(lock, "exit 3");
  assert.equal(r.code, 3);
  assert.equal(fs.existsSync(lock), false);
});

test("a lock whose holder is killed is released (or taken over) for the next setup", async () => {
  const lock = path.join(fresh(), "x.lock");
  const script = `source ${JSON.stringify(path.join(REPO, "server", "setup", "dir-lock.sh"))}
with_dir_lock "$1" sleep 30`;
  const proc = spawn("bash", ["-c", script, "holder", lock], { stdio: "ignore", detached: true });
  while (!fs.existsSync(path.join(lock, "pid"))) await new Promise((r) => setTimeout(r, 20));
  process.kill(-proc.pid!, "SIGKILL"); // the holder and its sleep
  await new Promise((r) => proc.once("close", r));
  const r = await shellHolder(lock, "echo got it");
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /got it/);
});
