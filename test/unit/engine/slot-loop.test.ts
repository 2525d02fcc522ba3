// The slot loop (the engine's scheduler) over the recording fake of the native port: where a decode runs (inline on
// the JS thread or on a libuv worker), what a step carries, KV-cache edits between steps and slot compaction. The real
// addon's inline decode is tested in test/integration/engine/native-build.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { RecordingNativeContext } from "../../../server/engine/native/fake.ts";
import { PromptCache } from "../../../server/engine/prompt-cache.ts";
import { Slot, SlotLoop, type InlineDecodePolicy } from "../../../server/engine/slot-loop.ts";

const loopOn = (native: RecordingNativeContext, inline?: InlineDecodePolicy, parallel = 4): SlotLoop =>
  new SlotLoop(native, { parallel, maxQueue: 8, inline });

const tokens = (n: number): Token[] => Array.from({ length: n }, (_, i) => (i + 2) as Token);
const next = () => Promise.resolve(7);

test("small steps decode inline, prompt-sized steps on a worker", async () => {
  const native = new RecordingNativeContext();
  const loop = loopOn(native, { maxTokens: 4, maxStepMs: 100 });
  assert.equal(loop.inlineDecode, true);
  const slot = new Slot(0);
  assert.equal(await loop.evaluate(slot, tokens(20), next), 7);
  assert.equal(await loop.evaluate(slot, [7 as Token], next), 7);
  assert.equal(await loop.evaluate(slot, tokens(3), next), 7);
  assert.deepEqual(native.calls, [
    { mode: "worker", tokens: 20 },
    { mode: "inline", tokens: 1 },
    { mode: "inline", tokens: 3 },
  ]);
  assert.deepEqual(loop.steps, { inline: 2, worker: 1, pipelined: 0 });
  assert.equal(slot.tokens.length, 24);
});

test("small steps go back to a worker while they are slow, and inline again once they are quick", async () => {
  const native = new RecordingNativeContext();
  const loop = loopOn(native, { maxTokens: 4, maxStepMs: 5 });
  const slot = new Slot(0);
  native.inlineMs = 20;
  await loop.evaluate(slot, [1 as Token], next);
  // The first slow inline step (20 ms) puts the average over the bound: the next small steps decode on a worker.
  await loop.evaluate(slot, [1 as Token], next);
  await loop.evaluate(slot, [1 as Token], next);
  assert.deepEqual(
    native.calls.map((c) => c.mode),
    ["inline", "worker", "worker"],
  );
  // Worker steps are quick: the average falls under the bound and steps decode inline again.
  native.inlineMs = 0;
  for (let i = 0; i < 20; i++) await loop.evaluate(slot, [1 as Token], next);
  assert.equal(native.calls.at(-1)!.mode, "inline");
});

test("without the patched addon's inline decode, or with the policy off, every step decodes on a worker", async () => {
  for (const [native, policy] of [
    [new RecordingNativeContext({ inline: false }), { maxTokens: 4, maxStepMs: 100 }],
    [new RecordingNativeContext(), undefined],
  ] as const) {
    const loop = loopOn(native, policy);
    assert.equal(loop.inlineDecode, false);
    await loop.evaluate(new Slot(0), [1 as Token], next);
    assert.deepEqual(native.calls, [{ mode: "worker", tokens: 1 }]);
  }
});

test("a failed inline decode fails the step's items and clears their slots; the loop goes on", async () => {
  const native = new RecordingNativeContext();
  const loop = loopOn(native, { maxTokens: 4, maxStepMs: 100 });
  const slot = new Slot(0);
  await loop.evaluate(slot, tokens(2), next);
  native.failInline = true;
  await assert.rejects(loop.evaluate(slot, [1 as Token], next), /Eval has failed/);
  assert.equal(slot.tokens.length, 0);
  native.failInline = false;
  assert.equal(await loop.evaluate(slot, tokens(2), next), 7);
});

test("a sequence moves into a free one's place between steps: they trade ids, and the free one keeps the moved state as its cache", async () => {
  const native = new RecordingNativeContext({ inline: false });
  const loop = loopOn(native);
  const [busy, free] = [new Slot(3), new Slot(1)];
  free.tokens.push(9 as Token);
  await loop.evaluate(busy, tokens(4), next);
  // Asked while a step is in flight: the copy waits for that step, and the next step waits for the copy.
  const started = native.nextDecode();
  const stepping = loop.evaluate(busy, [7 as Token], next);
  await started;
  const moved = loop.relocate({ busy, free });
  await stepping;
  await moved;
  await loop.evaluate(busy, [7 as Token], next);
  assert.deepEqual(native.log.slice(2), ["add 3@4+1", "decoded", "copy 3→1", "add 1@5+1", "decoded"]);
  assert.deepEqual([busy.id, free.id], [1, 3]);
  assert.deepEqual(free.tokens, busy.tokens.slice(0, 5));
});

test("a truncate queued after a move sees what the slot holds after the move", async () => {
  const native = new RecordingNativeContext({ inline: false });
  const loop = loopOn(native);
  const [busy, free] = [new Slot(2), new Slot(1)];
  free.tokens.push(9 as Token, 9 as Token, 9 as Token);
  await loop.evaluate(busy, tokens(4), next);
  const moved = loop.relocate({ busy, free });
  // A new request on the free slot whose prompt starts like the moved state (tokens 2, 3, then 8).
  await loop.truncate(free, (held) => (held[0] === 2 && held[1] === 3 ? 2 : 0));
  await moved;
  assert.deepEqual(native.log.slice(2), ["copy 2→1", "remove 2[2,4)"]);
  assert.deepEqual(free.tokens, [2, 3]);
});

test("a failed move leaves both ids alone and drops what the free slot held", async () => {
  const native = new RecordingNativeContext({ inline: false });
  const loop = loopOn(native);
  const [busy, free] = [new Slot(2), new Slot(1)];
  free.tokens.push(9 as Token);
  native.failCopy = true;
  await assert.rejects(loop.relocate({ busy, free }), /copy failed/);
  assert.deepEqual([busy.id, free.id, free.tokens.length], [2, 1, 0]);
  assert.deepEqual(native.log, ["copy 2→1", "dispose 1"]);
  assert.equal(await loop.evaluate(busy, tokens(2), next), 7, "the loop goes on");
});

/** Waits for the step in flight to end and the edits queued behind it to run. */
async function stepsDone(loop: SlotLoop): Promise<void> {
  await new Promise((r) => setTimeout(r, 5));
  await loop.drained();
}

test("a released slot that leaves a gap among the busy ones has the highest busy slot move into it", async () => {
  const native = new RecordingNativeContext({ inline: false });
  const moves: boolean[] = [];
  const loop = new SlotLoop(native, { parallel: 3, maxQueue: 8, onMove: (ok) => moves.push(ok) });
  const [a, b, c] = [await loop.acquire(undefined), await loop.acquire(undefined), await loop.acquire(undefined)];
  assert.deepEqual([a.id, b.id, c.id], [0, 1, 2]);
  await loop.evaluate(c, tokens(3), next);
  loop.release(b, () => assert.fail("the move failed"));
  await stepsDone(loop);
  assert.deepEqual(native.log.slice(-1), ["copy 2→1"]);
  assert.deepEqual([c.id, b.id], [1, 2], "the busy slots are 0 and 1 again");
  assert.deepEqual(b.tokens, c.tokens, "the freed slot keeps the moved state as its cache");
  assert.deepEqual(moves, [true]);
  assert.equal(loop.busy, 2);
  // Releasing the highest busy slot leaves no gap: nothing moves.
  loop.release(c, () => assert.fail("the move failed"));
  await loop.drained();
  assert.deepEqual(moves, [true]);
});

test("with moves off, a gap stays; a failed move switches them off", async () => {
  const off = new RecordingNativeContext({ inline: false });
  const loop = new SlotLoop(off, { parallel: 3, maxQueue: 8, moveSlots: false });
  const held = [await loop.acquire(undefined), await loop.acquire(undefined), await loop.acquire(undefined)];
  loop.release(held[1]!, () => {});
  await loop.drained();
  assert.deepEqual(off.log, []);

  const failing = new RecordingNativeContext({ inline: false });
  failing.failCopy = true;
  const failed: unknown[] = [];
  const loop2 = new SlotLoop(failing, { parallel: 4, maxQueue: 8 });
  const s = [0, 1, 2, 3].map(() => loop2.acquire(undefined));
  const slots = await Promise.all(s);
  loop2.release(slots[1]!, (err) => failed.push(err));
  await stepsDone(loop2);
  assert.equal(failed.length, 1);
  loop2.release(slots[0]!, (err) => failed.push(err));
  await stepsDone(loop2);
  assert.equal(failed.length, 1, "no more moves after a failure");
  assert.equal(failing.log.filter((l) => l.startsWith("copy")).length, 1);
});

test("a generation step carries every slot with a token ready, in slot id order, in one decode call", async () => {
  const native = new RecordingNativeContext({ inline: false });
  const loop = loopOn(native, undefined, 3);
  const slots = [await loop.acquire(undefined), await loop.acquire(undefined), await loop.acquire(undefined)];
  for (const _ of slots) loop.enter();
  // Prompts of different lengths queued together: one step, whole prompts, in slot id order.
  await Promise.all([slots[2]!, slots[0]!, slots[1]!].map((slot, i) => loop.evaluate(slot, tokens(2 + i), next)));
  assert.deepEqual(native.log.slice(0, 4), ["add 0@0+3", "add 1@0+4", "add 2@0+2", "decoded"]);
  // Each slot then queues its next token after the gate: one step of three tokens.
  const generated = slots.map(async (slot) => {
    await loop.gate();
    return loop.evaluate(slot, [7 as Token], next);
  });
  assert.deepEqual(await Promise.all(generated), [7, 7, 7]);
  assert.deepEqual(native.calls.at(-1), { mode: "worker", tokens: 3 });
  assert.deepEqual(native.log.slice(4), ["add 0@3+1", "add 1@4+1", "add 2@2+1", "decoded"]);
  assert.deepEqual(loop.stats.decodes, 2);
  for (const _ of slots) loop.leave();
});

test("the threadpool sleeps while the loop is idle and during decodeOther's own compute, never under a decode", async () => {
  const native = new RecordingNativeContext({ inline: false, threadpool: true });
  const loop = new SlotLoop(native, { parallel: 2, maxQueue: 8 });
  const [a, b] = [await loop.acquire(undefined), await loop.acquire(undefined)];
  await loop.evaluate(a, tokens(3), next);
  // decodeOther (an image: encoded on threads of its own, then decoded): the pool sleeps before the callback runs.
  const other = loop.decodeOther(b, tokens(2), async () => {
    native.log.push("encode");
    native.initBatch(2);
    await native.decodeBatch();
  });
  const step = loop.evaluate(a, [1 as Token], next);
  await Promise.all([other, step]);
  assert.deepEqual(native.log.slice(native.log.indexOf("pause") - 1, native.log.indexOf("encode") + 1), [
    "decoded",
    "pause",
    "encode",
  ]);
  // One slot still busy: not idle, no pause.
  const pauses = native.log.filter((l) => l === "pause").length;
  loop.release(b, () => assert.fail("the move failed"));
  await loop.drained();
  assert.equal(native.log.filter((l) => l === "pause").length, pauses);
  // The last slot released while its step is in flight: the pause waits for the decode to finish.
  const started = native.nextDecode();
  const last = loop.evaluate(a, tokens(4), next);
  await started;
  loop.release(a, () => assert.fail("the move failed"));
  await last;
  await loop.drained();
  assert.equal(native.log.at(-1), "pause");
  assert.ok(!native.log.includes("pause during a decode"), native.log.join(", "));
});

test("a move never overwrites a live history: states are swapped where the runtime saves them, else a spare empty slot takes it, else no move", async () => {
  // With the state calls: the busy slot and the free one trade states and ids, each keeping its own tokens.
  const native = new RecordingNativeContext({ inline: false, states: true });
  const loop = new SlotLoop(native, { parallel: 3, maxQueue: 8 });
  const [a, b, c] = [await loop.acquire(undefined), await loop.acquire(undefined), await loop.acquire(undefined)];
  await Promise.all([loop.evaluate(b, tokens(3), next), loop.evaluate(c, tokens(5), next)]);
  const [bHeld, cHeld] = [[...b.tokens], [...c.tokens]];
  loop.release(b, () => assert.fail("the move failed"));
  await stepsDone(loop);
  assert.deepEqual(native.log.slice(-4), ["save 2", "save 1", "restore 1 ← state of 2", "restore 2 ← state of 1"]);
  assert.deepEqual([a.id, c.id, b.id], [0, 1, 2]);
  assert.deepEqual([b.tokens, c.tokens], [bHeld, cHeld], "the freed conversation's history is kept");

  // Without them: the freed slot's history is copied into an empty free slot first, which takes the busy one's place.
  const plain = new RecordingNativeContext({ inline: false });
  const loop2 = new SlotLoop(plain, { parallel: 4, maxQueue: 8 });
  const s = await Promise.all([0, 1, 2, 3].map(() => loop2.acquire(undefined)));
  await Promise.all([loop2.evaluate(s[1]!, tokens(3), next), loop2.evaluate(s[2]!, tokens(4), next)]);
  loop2.release(s[3]!, () => assert.fail("the move failed"));
  loop2.release(s[1]!, () => assert.fail("the move failed"));
  await stepsDone(loop2);
  // Busy 0 and 2, free 1 (3 tokens) and 3 (empty): 1's history goes to 3, then 2 moves into 1.
  assert.deepEqual(plain.log.slice(-2), ["copy 1→3", "copy 2→1"]);
  assert.deepEqual([s[0]!.id, s[2]!.id, s[1]!.id, s[3]!.id], [0, 1, 3, 2]);
  assert.deepEqual(s[1]!.tokens, tokens(3));

  // Without them and without an empty slot: the gap stays.
  const none = new RecordingNativeContext({ inline: false });
  const loop3 = new SlotLoop(none, { parallel: 3, maxQueue: 8 });
  const t = await Promise.all([0, 1, 2].map(() => loop3.acquire(undefined)));
  await Promise.all(t.map((slot) => loop3.evaluate(slot, tokens(2), next)));
  loop3.release(t[1]!, () => assert.fail("the move failed"));
  await stepsDone(loop3);
  assert.ok(!none.log.some((l) => l.startsWith("copy")), none.log.join(", "));
});

test("reuse(): a prompt the RAM cache holds more of is restored, the history it overwrites is saved first; a refused state falls back to an empty slot", async () => {
  const native = new RecordingNativeContext({ inline: false, states: true });
  const cache = new PromptCache(1 << 20);
  const scoped = cache.scoped(native);
  const loop = new SlotLoop(native, { parallel: 1, maxQueue: 8, promptCache: scoped });
  const slot = await loop.acquire(undefined);
  const conversation = (first: number, n: number): Token[] => Array.from({ length: n }, (_, i) => (first + i) as Token);
  const keepAll = (held: readonly Token[]) => held.length;
  // Conversation A fills the slot; conversation B's prompt overwrites it: A's history is saved first.
  const a = conversation(1000, 80);
  await loop.evaluate(slot, a, next);
  const b = conversation(5000, 60);
  assert.deepEqual(await loop.reuse(slot, b, () => 0), { restored: 0, looked: true, failed: false });
  assert.equal(cache.size, 1);
  assert.ok(native.log.includes("save 0"));
  await loop.evaluate(slot, b, next);
  // A's next turn: A's state is restored (B's history saved first), then cut to the common prefix.
  const aNext = [...a, ...conversation(9000, 10)];
  const reuse = await loop.reuse(slot, aNext, (held) => Math.min(held.length, a.length));
  assert.deepEqual(reuse, { restored: 80, looked: true, failed: false });
  assert.deepEqual(slot.tokens, a);
  assert.equal(cache.size, 2);
  // A prompt the slot already holds: the cache is not asked.
  assert.equal((await loop.reuse(slot, aNext, keepAll)).looked, false);
  // B's next turn with B's saved state refused: the slot starts empty, the entry goes.
  native.badState = "state of 0";
  const bNext = [...b, ...conversation(7000, 5)];
  assert.deepEqual(await loop.reuse(slot, bNext, keepAll), { restored: 0, looked: true, failed: true });
  assert.deepEqual(slot.tokens, []);
  assert.equal(scoped.match(bNext).length, 0);
});
