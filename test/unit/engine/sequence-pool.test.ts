import { test } from "node:test";
import assert from "node:assert/strict";
import { isAppError } from "../../../server/common/errors.ts";
import { SequencePool } from "../../../server/engine/sequence-pool.ts";

test("hands out free sequences, then queues FIFO, then refuses with SERVER_BUSY and Retry-After", async () => {
  const pool = new SequencePool(["a"], 1);
  const first = await pool.acquire(undefined);
  assert.equal(first, "a");
  const waiting = pool.acquire(undefined);
  assert.equal(pool.queued, 1);
  await assert.rejects(pool.acquire(undefined), (e) => isAppError(e) && e.code === "SERVER_BUSY" && e.headers["Retry-After"] === "1");
  pool.release(first);
  assert.equal(await waiting, "a");
  assert.equal(pool.busy, 1);
});

test("maxQueue 0 refuses as soon as every sequence is busy", async () => {
  const pool = new SequencePool([1], 0);
  await pool.acquire(undefined);
  await assert.rejects(pool.acquire(undefined), (e) => isAppError(e) && e.code === "SERVER_BUSY");
});

test("an aborted waiter leaves the queue", async () => {
  const pool = new SequencePool([1], 4);
  const held = await pool.acquire(undefined);
  const ac = new AbortController();
  const waiting = pool.acquire(ac.signal);
  ac.abort();
  await assert.rejects(waiting, (e) => isAppError(e) && e.code === "CLIENT_CLOSED");
  assert.equal(pool.queued, 0);
  pool.release(held);
  assert.equal(pool.busy, 0);
});

test("prefers the sequence with the best score (longest cached prefix)", async () => {
  const pool = new SequencePool(["x", "yy", "z"], 0);
  assert.equal(await pool.acquire(undefined, (s) => s.length), "yy");
});

test("among equally good free sequences the first created is handed out, keeping busy ids compact", async () => {
  const pool = new SequencePool([0, 1, 2, 3], 0);
  const [a, b, c] = [await pool.acquire(undefined), await pool.acquire(undefined), await pool.acquire(undefined)];
  assert.deepEqual([a, b, c], [0, 1, 2]);
  pool.release(b);
  pool.release(a);
  assert.equal(await pool.acquire(undefined, () => 0), 0);
  assert.equal(await pool.acquire(undefined), 1);
  assert.equal(await pool.acquire(undefined, (s) => (s === 3 ? 5 : 0)), 3, "a cached prefix still wins");
});
