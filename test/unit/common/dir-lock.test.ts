import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { lockHeld, releaseHeldLocks, withDirLock } from "../../../server/common/dir-lock.ts";

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

test("an owner on another host (a pod sharing the volume) is alive while its pid file changes, whatever its pid here", async () => {
  const lock = tmpLock();
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "host"), "another-pod");
  fs.writeFileSync(path.join(lock, "token"), "theirs");
  fs.writeFileSync(path.join(lock, "pid"), "1"); // a pid that runs here, and means nothing: it is another host's
  const pidFile = path.join(lock, "pid");
  // Its holder keeps touching the file (with whatever clock it has: an hour behind here) for 300 ms, then dies.
  let beats = 0;
  const beat = setInterval(() => {
    const skewed = new Date(Date.now() - 3_600_000 + beats++ * 1000);
    fs.utimesSync(pidFile, skewed, skewed);
    if (beats === 6) clearInterval(beat);
  }, 50);
  const t0 = Date.now();
  let waited = false;
  const got = await withDirLock(lock, async () => Date.now() - t0, {
    acrossHosts: true,
    pollMs: 10,
    staleMs: 200,
    onWait: () => (waited = true),
  });
  clearInterval(beat);
  assert.ok(waited);
  assert.ok(got >= 300 + 200 - 60, `taken over ${got} ms in: after the heartbeat stopped, not while it went on`);
});

test("a container restarted in place (same host, same pid: its dead predecessor's lock) takes the lock over", async () => {
  const lock = tmpLock();
  fs.mkdirSync(lock, { recursive: true });
  fs.writeFileSync(path.join(lock, "host"), os.hostname());
  fs.writeFileSync(path.join(lock, "token"), "predecessor");
  fs.writeFileSync(path.join(lock, "pid"), String(process.pid));
  assert.equal(await withDirLock(lock, async () => "taken", { acrossHosts: true, pollMs: 10, staleMs: 100 }), "taken");
});

test("a holder taken over by mistake does not remove its successor's lock; SIGTERM's release frees what it holds", async () => {
  const lock = tmpLock();
  await withDirLock(
    lock,
    async () => {
      fs.writeFileSync(path.join(lock, "token"), "successor"); // another holder took it over meanwhile
    },
    { acrossHosts: true },
  );
  assert.equal(fs.readFileSync(path.join(lock, "token"), "utf8"), "successor");
  fs.rmSync(lock, { recursive: true });
  let inside = false;
  const holding = withDirLock(
    lock,
    async () => {
      inside = true;
      await new Promise((r) => setTimeout(r, 100));
    },
    { acrossHosts: true },
  );
  while (!inside) await new Promise((r) => setTimeout(r, 5));
  releaseHeldLocks();
  assert.equal(fs.existsSync(lock), false);
  await holding;
});

test("a holder across hosts keeps its pid file fresh and names its host, so waiters elsewhere can tell it lives", async () => {
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
    { acrossHosts: true, heartbeatMs: 20 },
  );
});
