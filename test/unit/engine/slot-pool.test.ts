import { test } from "node:test";
import assert from "node:assert/strict";
import { isAppError } from "../../../server/common/errors.ts";
import { PREFER_SLACK, SlotPool } from "../../../server/engine/slot-pool.ts";

test("hands out free sequences, then queues FIFO, then refuses with SERVER_BUSY and Retry-After", async () => {
  const pool = new SlotPool(["a"], 1);
  const first = await pool.acquire(undefined);
  assert.equal(first, "a");
  const waiting = pool.acquire(undefined);
  assert.equal(pool.queued, 1);
  await assert.rejects(
    pool.acquire(undefined),
    (e) => isAppError(e) && e.code === "SERVER_BUSY" && e.headers["Retry-After"] === "1",
  );
  pool.release(first);
  assert.equal(await waiting, "a");
  assert.equal(pool.busy, 1);
});

test("maxQueue 0 refuses as soon as every sequence is busy", async () => {
  const pool = new SlotPool([1], 0);
  await pool.acquire(undefined);
  await assert.rejects(pool.acquire(undefined), (e) => isAppError(e) && e.code === "SERVER_BUSY");
});

test("an aborted waiter leaves the queue", async () => {
  const pool = new SlotPool([1], 4);
  const held = await pool.acquire(undefined);
  const ac = new AbortController();
  const waiting = pool.acquire(ac.signal);
  ac.abort();
  await assert.rejects(waiting, (e) => isAppError(e) && e.code === "CLIENT_CLOSED");
  assert.equal(pool.queued, 0);
  pool.release(held);
  assert.equal(pool.busy, 0);
});

test("prefers the sequence with the best score (longest cached prefix) among equally compact choices", async () => {
  const pool = new SlotPool(["x", "yy", "z"], 0);
  assert.equal(await pool.acquire(undefined, (s) => s.length), "yy");
});

test("among equally compact choices, the one whose cache loses least: another conversation's history is kept", async () => {
  // Sequence 0 holds 500 tokens of another conversation, 20 of them (a shared system prompt) also this prompt's start;
  // 1 holds nothing; 2 holds 60 tokens sharing 10.
  const held = new Map([
    [0, 500],
    [1, 0],
    [2, 60],
  ]);
  const common = new Map([
    [0, 20],
    [1, 0],
    [2, 10],
  ]);
  const pool = new SlotPool([0, 1, 2], 0);
  assert.equal(
    await pool.acquire(
      undefined,
      (s) => common.get(s)!,
      (s) => held.get(s)!,
    ),
    1,
    "the empty one, not the one sharing 20 tokens",
  );
  assert.equal(
    await pool.acquire(
      undefined,
      (s) => common.get(s)!,
      (s) => held.get(s)!,
    ),
    2,
    "then the one losing 50 tokens, not 480",
  );
  pool.release(1);
  pool.release(2);
  assert.equal(
    await pool.acquire(
      undefined,
      (s) => (s === 0 ? 499 : 0),
      (s) => held.get(s)!,
    ),
    0,
    "its own history: the longest prefix by far",
  );
});

test("keeps the busy sequences a compact run of ids: the first created, then the hole next to the busy ones", async () => {
  const pool = new SlotPool([0, 1, 2, 3, 4], 0);
  const [a, b, c] = [await pool.acquire(undefined), await pool.acquire(undefined), await pool.acquire(undefined)];
  assert.deepEqual([a, b, c], [0, 1, 2]);
  pool.release(b);
  assert.equal(await pool.acquire(undefined), 1, "the hole between 0 and 2, not 3");
  pool.release(a);
  assert.equal(
    await pool.acquire(undefined, (s) => (s === 4 ? PREFER_SLACK : 0)),
    0,
    "a prefix longer by PREFER_SLACK tokens does not split the run",
  );
  pool.release(0);
  assert.equal(
    await pool.acquire(undefined, (s) => (s === 3 ? 5 : 0)),
    3,
    "3 extends the run 1–2 as well as 0 does, and has the longer prefix",
  );
});

test("a cached prefix longer than the others by more than PREFER_SLACK tokens wins over compactness", async () => {
  const pool = new SlotPool([0, 1, 2, 3], 0);
  await pool.acquire(undefined);
  assert.equal(
    await pool.acquire(undefined, (s) => (s === 2 ? 1000 : s === 1 ? 1000 - PREFER_SLACK : 0)),
    1,
    "within the slack of the best, the one extending the run",
  );
  assert.equal(await pool.acquire(undefined, (s) => (s === 3 ? PREFER_SLACK + 1 : 0)), 3);
  pool.release(1);
  assert.equal(
    await pool.acquire(undefined, (s) => (s === 2 ? PREFER_SLACK + 1 : 0)),
    2,
    "even where it leaves a hole",
  );
});

test("compact(): the highest busy sequence trades places with the lowest gap until the busy ones are one run", async () => {
  const pool = new SlotPool([0, 1, 2, 3, 4, 5, 6, 7], 0);
  const held = [];
  for (let i = 0; i < 8; i++) held.push(await pool.acquire(undefined));
  for (const s of [1, 2, 4, 5, 6]) pool.release(s);
  // Busy: 0, 3, 7.
  assert.deepEqual(pool.compact(), { busy: 7, free: 1 });
  assert.deepEqual(pool.compact(), { busy: 3, free: 2 });
  assert.equal(pool.compact(), undefined);
  // The ranks follow the moves: the next request extends the run into rank 3, where sequence 2 is now (it traded with
  // 3).
  assert.equal(await pool.acquire(undefined), 2);
  pool.release(0);
  assert.equal(pool.compact(), undefined, "busy at ranks 1–3 (one run): nothing to move");
});

test("compact() keeps a live history in the gap: a swap where states can move, else through an empty spare, else no move", async () => {
  const busyOf = async (pool: SlotPool<number>, n: number) => {
    for (let i = 0; i < n; i++) await pool.acquire(undefined);
  };
  const tokens = new Map([
    [1, 40],
    [2, 0],
  ]);
  const held = (s: number) => tokens.get(s) ?? 0;
  // Busy 0 and 3; 1 holds a history, 2 is empty.
  const swap = new SlotPool([0, 1, 2, 3], 0);
  await busyOf(swap, 4);
  swap.release(1);
  swap.release(2);
  assert.deepEqual(swap.compact(held, true), { busy: 3, free: 1, swap: true });
  const spare = new SlotPool([0, 1, 2, 3], 0);
  await busyOf(spare, 4);
  spare.release(1);
  spare.release(2);
  assert.deepEqual(spare.compact(held, false), { busy: 3, free: 1, spare: 2 });
  assert.equal(spare.compact(held, false), undefined, "busy 0 and 3 now hold ranks 0 and 1");
  assert.equal(await spare.acquire(undefined), 1, "1 now has rank 2 (the spare's), next to the run; the spare has 3's");
  const none = new SlotPool([0, 1, 2], 0);
  await busyOf(none, 3);
  none.release(1);
  assert.equal(none.compact(held, false), undefined, "no spare, no swap: the history stays, so does the gap");
  assert.deepEqual(
    none.compact(() => 0, false),
    { busy: 2, free: 1 },
    "an empty gap is filled as before",
  );
});

test("a freed sequence goes to the waiter it holds the longest prefix of, within a bound on passing the first", async () => {
  const pool = new SlotPool(["s"], 8);
  const seq = await pool.acquire(undefined);
  // The freed sequence holds 100 tokens of conversation "b"'s prompt and 10 of "a"'s.
  const score = (name: string) => () => (name === "b" ? 100 : 10);
  const order: string[] = [];
  const wait = (name: string) => pool.acquire(undefined, score(name)).then((s) => (order.push(name), s));
  const waits = [wait("a"), wait("b")];
  pool.release(seq);
  await waits[1];
  assert.deepEqual(order, ["b"]);
  pool.release(seq);
  await waits[0];
  assert.deepEqual(order, ["b", "a"]);

  // "a" is passed over at most once per sequence (one here): then it goes first whatever the others hold.
  const first = wait("a"),
    second = wait("b"),
    third = wait("b");
  pool.release(seq);
  await second;
  pool.release(seq);
  await first;
  assert.deepEqual(order.slice(2), ["b", "a"]);
  pool.release(seq);
  await third;
  // Within PREFER_SLACK of the first waiter's prefix: FIFO.
  const near = pool.acquire(undefined, () => 5),
    far = pool.acquire(undefined, () => 5 + PREFER_SLACK);
  pool.release(seq);
  assert.equal(await near, "s");
  pool.release(seq);
  assert.equal(await far, "s");
});

test("a prompt the RAM cache can restore takes an empty sequence rather than overwrite a history", async () => {
  // Sequence 0 holds 300 tokens, 250 of them this prompt's start; 1 is empty.
  const own = (s: number) => (s === 0 ? 250 : 0),
    held = (s: number) => (s === 0 ? 300 : 0);
  const pool = new SlotPool([0, 1], 0);
  assert.equal(await pool.acquire(undefined, own, held), 0, "without the cache: 1 lacks 250 tokens, 0 loses 50");
  pool.release(0);
  assert.equal(await pool.acquire(undefined, own, held, 260), 1, "the cache restores 260 into either: 1 loses none");
});

test("placed: the sequence that loses least is taken, then moved next to the busy ones, the history there kept", async () => {
  // The bench's 4 × 64 case: every sequence holds a history; 0 and 2 hold the shortest, 1 the longest.
  const tokens = new Map([
    [0, 20],
    [1, 300],
    [2, 30],
    [3, 200],
  ]);
  const held = (s: number) => tokens.get(s)!;
  const moves: unknown[] = [];
  const place = (canSwap: boolean) => ({ canSwap, held, move: (m: unknown) => void moves.push(m) });
  const pool = new SlotPool([0, 1, 2, 3], 0);
  assert.equal(await pool.acquire(undefined, () => 0, held, 0, place(true)), 0, "the fewest tokens lost");
  assert.deepEqual(moves, [], "one run: nothing to move");
  assert.equal(await pool.acquire(undefined, () => 0, held, 0, place(true)), 2, "30 lost, not 300 (no run penalty)");
  assert.deepEqual(moves, [{ busy: 2, free: 1, swap: true }], "2 moves into place 1; 1's history goes to place 2");
  assert.equal(
    await pool.acquire(undefined, () => 0, held, 0, place(true)),
    3,
    "200 lost, not 300: place 2 is 1's now",
  );
  assert.deepEqual(moves.slice(1), [{ busy: 3, free: 1, swap: true }], "3 then trades with 1 (place 2)");

  // A conversation's next turn (3 holds 100 tokens of its prompt) moves to the empty place next to the busy one: a
  // copy, its history also stays where it was.
  const copied = new SlotPool([0, 1, 2, 3], 0);
  for (const [s, n] of [0, 0, 300, 100].entries()) tokens.set(s, n);
  moves.length = 0;
  assert.equal(await copied.acquire(undefined, () => 0, held, 0, place(false)), 0);
  assert.equal(await copied.acquire(undefined, (s) => (s === 3 ? 100 : 0), held, 0, place(false)), 3);
  assert.deepEqual(moves, [{ busy: 3, free: 1 }]);
  // Without swaps and without an empty spare, a live history in the only place next to the busy ones stays: no move.
  const stuck = new SlotPool([0, 1, 2], 0);
  for (const [s, n] of [20, 300, 0].entries()) tokens.set(s, n);
  moves.length = 0;
  assert.equal(await stuck.acquire(undefined, () => 0, held, 0, place(false)), 2);
  assert.equal(await stuck.acquire(undefined, () => 0, held, 0, place(false)), 0);
  assert.deepEqual(moves, []);

  // Without a placement (a runtime that cannot move sequences) compactness still weighs PREFER_SLACK per run.
  const unplaced = new SlotPool([0, 1, 2, 3], 0);
  for (const [s, n] of [20, 300, 30, 200].entries()) tokens.set(s, n);
  await unplaced.acquire(undefined, () => 0, held);
  assert.equal(await unplaced.acquire(undefined, () => 0, held), 2, "30 + PREFER_SLACK lost is still less than 300");
});
