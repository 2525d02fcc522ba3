import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { lockHeld, withDirLock } from "../../../server/common/dir-lock.ts";

const tmpLock = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-lock-")), "sub", "x.lock");

test("withDirLock runs holders one at a time and removes the lock afterwards", async () => {
  const lock = tmpLock();
  const events: string[] = [];
  const hold = (name: string) =>
    withDirLock(
      lock,
      async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 30));
        events.push(`${name} out`);
        return name;
      },
      { pollMs: 5 },
    );
  assert.deepEqual(await Promise.all([hold("a"), hold("b")]), ["a", "b"]);
  assert.deepEqual(events, ["a in", "a out", "b in", "b out"]);
  assert.equal(fs.existsSync(lock), false);
});

test("a lock left by a dead process is taken over; a live owner's is not", async () => {
  const lock = tmpLock();
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "pid"), "2147483646"); // no such process
  assert.equal(lockHeld(lock), false);
  assert.equal(await withDirLock(lock, async () => "taken"), "taken");
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "pid"), String(process.pid));
  assert.equal(lockHeld(lock), true);
});

test("the lock is released when the holder throws", async () => {
  const lock = tmpLock();
  await assert.rejects(
    withDirLock(lock, async () => {
      throw new Error("boom");
    }),
    /boom/,
  );
  assert.equal(fs.existsSync(lock), false);
});

test("an owner on another host (a pod sharing the volume) is alive while its pid file is fresh, whatever its pid here", async () => {
  const lock = tmpLock();
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "host"), "another-pod");
  fs.writeFileSync(path.join(lock, "pid"), "2147483646"); // no such process here, and it does not matter
  assert.equal(lockHeld(lock), true, "touched just now");
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(path.join(lock, "pid"), old, old);
  assert.equal(lockHeld(lock), false, "not touched for a minute: its pod is gone");
  fs.writeFileSync(path.join(lock, "pid"), "1"); // a live pid here (init) does not make a stale foreign owner alive
  fs.utimesSync(path.join(lock, "pid"), old, old);
  assert.equal(lockHeld(lock), false);
  assert.equal(await withDirLock(lock, async () => "taken"), "taken");
});

test("a holder keeps its pid file fresh and names its host, so waiters on other hosts can tell it lives", async () => {
  const lock = tmpLock();
  await withDirLock(
    lock,
    async () => {
      assert.equal(fs.readFileSync(path.join(lock, "host"), "utf8"), os.hostname());
      const old = new Date(Date.now() - 60_000);
      fs.utimesSync(path.join(lock, "pid"), old, old);
      const deadline = Date.now() + 5_000;
      while (Date.now() - fs.statSync(path.join(lock, "pid")).mtimeMs > 30_000 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      assert.ok(Date.now() - fs.statSync(path.join(lock, "pid")).mtimeMs < 30_000, "touched again");
    },
    { heartbeatMs: 20 },
  );
});
