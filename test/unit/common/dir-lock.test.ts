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
