// Burst admission bookkeeping: announced requests hold newcomers' prompts until they arrive, never longer than the
// bound.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Arrivals } from "../../../server/engine/arrivals.ts";

const state = (p: Promise<void>) =>
  Promise.race([p.then(() => "resolved"), new Promise((r) => setImmediate(() => r("pending")))]);

test("nothing announced: no wait at all", () => {
  assert.equal(new Arrivals().quiet(1000), undefined);
});

test("a bound of 0 (GANTRY_ARRIVAL_WAIT_MS=0): no wait, even with requests announced", () => {
  const arrivals = new Arrivals();
  arrivals.announce();
  assert.equal(arrivals.quiet(0), undefined);
});

test("waits until every announced request settled; settling twice counts once", async () => {
  const arrivals = new Arrivals();
  const a = arrivals.announce(),
    b = arrivals.announce();
  const quiet = arrivals.quiet(60_000)!;
  a.settle();
  a.settle();
  assert.equal(arrivals.pending, 1);
  assert.equal(await state(quiet), "pending");
  b.settle();
  assert.equal(await state(quiet), "resolved");
  assert.equal(arrivals.pending, 0);
  assert.equal(arrivals.quiet(1000), undefined);
});

test("an announcement that never arrives holds nobody longer than the bound", async () => {
  const arrivals = new Arrivals();
  const stuck = arrivals.announce();
  await arrivals.quiet(5);
  assert.equal(arrivals.pending, 1);
  // A waiter that timed out is not woken again later.
  stuck.settle();
  assert.equal(arrivals.pending, 0);
});
