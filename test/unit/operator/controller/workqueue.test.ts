import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { WorkQueue } from "../../../../operator/controller/workqueue.ts";

const PENDING = Symbol("pending");
/** The promise's value, or PENDING if it has not settled within ms. */
const within = <T>(p: Promise<T>, ms: number): Promise<T | typeof PENDING> =>
  Promise.race([p, sleep(ms, PENDING, { ref: false })]);

const queue = (t: { after: (fn: () => void) => void }, opts?: ConstructorParameters<typeof WorkQueue>[0]) => {
  const q = new WorkQueue(opts);
  t.after(() => q.shutDown());
  return q;
};

test("a key queued several times is handed out once, in first-added order", async (t) => {
  const q = queue(t);
  for (const k of ["a", "b", "a", "c", "b", "a"]) q.add(k);
  assert.equal(q.length, 3);
  assert.deepEqual([await q.get(), await q.get(), await q.get()], ["a", "b", "c"]);
  assert.equal(q.length, 0);
  assert.equal(await within(q.get(), 50), PENDING);
});

test("a key added while it is processed is handed out again after done(), never to two workers at once", async (t) => {
  const q = queue(t);
  q.add("a");
  assert.equal(await q.get(), "a");
  q.add("a");
  q.add("a");
  assert.equal(q.length, 0, "not queued while processing");
  const second = q.get();
  assert.equal(await within(second, 50), PENDING, "a second worker does not get the key in process");
  q.done("a");
  assert.equal(await within(second, 1000), "a", "re-queued once done");
  q.done("a");
  assert.equal(await within(q.get(), 50), PENDING, "the two adds made one rerun");
});

test("done() without a new add does not re-queue the key", async (t) => {
  const q = queue(t);
  q.add("a");
  const k = await q.get();
  q.done(k!);
  assert.equal(q.length, 0);
  q.add("a");
  assert.equal(await q.get(), "a", "and it can be added again");
});

test("get() waits for a key and resolves when one is added", async (t) => {
  const q = queue(t);
  const waiting = q.get();
  assert.equal(await within(waiting, 30), PENDING);
  q.add("x");
  assert.equal(await within(waiting, 1000), "x");
  // The handed-out key is in process: adding it again waits for done().
  q.add("x");
  assert.equal(await within(q.get(), 50), PENDING);
});

test("several waiting workers each get a different key", async (t) => {
  const q = queue(t);
  const workers = [q.get(), q.get()];
  q.add("a");
  q.add("b");
  assert.deepEqual((await Promise.all(workers)).sort(), ["a", "b"]);
});

test("addRateLimited backs off exponentially per key, capped, and forget() resets it", (t) => {
  const q = queue(t, { baseDelayMs: 5, maxDelayMs: 100 });
  assert.deepEqual(
    Array.from({ length: 7 }, () => q.addRateLimited("a")),
    [5, 10, 20, 40, 80, 100, 100],
  );
  assert.equal(q.failuresOf("a"), 7);
  assert.equal(q.addRateLimited("b"), 5, "per key");
  q.forget("a");
  assert.equal(q.failuresOf("a"), 0);
  assert.equal(q.addRateLimited("a"), 5);
});

test("the default backoff starts at 5ms and doubles", (t) => {
  const q = queue(t);
  assert.deepEqual([q.addRateLimited("k"), q.addRateLimited("k"), q.addRateLimited("k")], [5, 10, 20]);
});

test("a rate-limited key comes back after its delay", async (t) => {
  const q = queue(t, { baseDelayMs: 20 });
  q.addRateLimited("a");
  assert.equal(q.length, 0, "not at once");
  assert.equal(await within(q.get(), 2000), "a");
});

test("addAfter adds the key after the delay; a delay of 0 adds it at once", async (t) => {
  const q = queue(t);
  q.addAfter("now", 0);
  assert.equal(q.length, 1);
  assert.equal(await q.get(), "now");
  q.addAfter("later", 30);
  assert.equal(q.length, 0);
  assert.equal(await within(q.get(), 2000), "later");
});

test("a shorter addAfter is not held back by a longer one pending for the same key", async (t) => {
  // "One pending timer per key: the earliest wins" — the key must come back at the earlier time.
  const q = queue(t);
  q.addAfter("a", 60_000);
  q.addAfter("a", 20);
  assert.equal(await within(q.get(), 2000), "a");
});

test("shutDown resolves waiting workers with undefined and stops handing out keys", async (t) => {
  const q = queue(t);
  const waiters = [q.get(), q.get()];
  q.addAfter("timer", 20);
  q.shutDown();
  assert.deepEqual(await Promise.all(waiters), [undefined, undefined]);
  q.add("late");
  assert.equal(q.length, 0, "adds are ignored");
  assert.equal(await q.get(), undefined);
  await sleep(50);
  assert.equal(q.length, 0, "pending timers were cancelled");
});

test("urgent keys are handed out before the others; a waiting key added as urgent moves ahead, once", async (t) => {
  const q = queue(t);
  for (const k of ["a", "b", "c"]) q.add(k);
  q.add("new", true);
  q.add("c", true);
  q.add("c", true);
  q.add("a"); // already waiting: stays where it is
  assert.equal(q.length, 4);
  const order = [];
  for (let i = 0; i < 4; i++) order.push(await q.get());
  assert.deepEqual(order, ["new", "c", "a", "b"]);
  assert.equal(q.length, 0);
  assert.equal(await within(q.get(), 50), PENDING, "c's entry left in the normal lane is not handed out again");
});

test("a key added as urgent while it is processed comes back urgent after done()", async (t) => {
  const q = queue(t);
  q.add("a");
  assert.equal(await q.get(), "a");
  q.add("b");
  q.add("a");
  q.add("a", true);
  q.done("a");
  assert.deepEqual([await q.get(), await q.get()], ["a", "b"]);
});

test("a rate-limited urgent key comes back urgent", async (t) => {
  const q = queue(t);
  q.add("b");
  q.addRateLimited("a", true);
  await sleep(30);
  assert.deepEqual([await q.get(), await q.get()], ["a", "b"]);
});
