// The step pipeline (server/engine/step-pipeline.ts) in the slot loop, over the recording fake of the native port: a
// continuing slot's next decode starts before its token is handed over, the generation loop takes that decode's
// result, a loop that leaves drops its continuation (its token stays decoded in the slot), and KV-cache edits never run
// under a decode. The real model with and without the pipeline: test/integration/engine/step-pipeline.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { RecordingNativeContext } from "../../../server/engine/native/fake.ts";
import { INLINE_DECODE, Slot, SlotLoop } from "../../../server/engine/slot-loop.ts";
import { pipelinesSteps } from "../../../server/engine/step-pipeline.ts";

const pipelined = (native: RecordingNativeContext) =>
  new SlotLoop(native, { parallel: 4, maxQueue: 8, inline: INLINE_DECODE, pipeline: true });
const prompt = (n: number): Token[] => Array.from({ length: n }, (_, i) => (i + 2) as Token);
const always = () => true;
const never = () => false;

/** A sample function that counts its calls. */
function counted() {
  const calls = { n: 0 };
  return { calls, sample: () => (calls.n++, Promise.resolve(7)) };
}

/** A pipelined loop whose slot 0 has its prompt decoded and its first token continued (decoding now). */
async function oneContinued() {
  const native = new RecordingNativeContext();
  const events: string[] = [];
  const loop = new SlotLoop(native, { parallel: 2, maxQueue: 8, pipeline: true, onPipeline: (e) => events.push(e) });
  const slot = new Slot(0);
  const { calls, sample } = counted();
  loop.enter();
  await loop.evaluate(slot, prompt(3), sample, always);
  return { native, events, loop, slot, calls, sample };
}

test("policy: pipelined with every layer on a GPU (auto) or when asked (on); not with off, nor where the CPU computes", () => {
  assert.equal(pipelinesSteps("auto", 33, 33), true);
  assert.equal(pipelinesSteps("auto", 20, 33), false, "a partial offload computes on every core too");
  assert.equal(pipelinesSteps("auto", 0, 33), false);
  assert.equal(pipelinesSteps("on", 0, 33), true);
  assert.equal(pipelinesSteps("off", 33, 33), false);
});

test("the next decode starts before the sampled token is handed over; evaluating that token takes its result", async () => {
  const native = new RecordingNativeContext();
  const loop = pipelined(native);
  assert.equal(loop.inlineDecode, false, "pipelined steps decode on a worker");
  const slot = new Slot(0);
  const { calls, sample } = counted();
  loop.enter();
  const first = await loop.evaluate(slot, prompt(3), sample, always);
  // The loop has its token now, and the decode of that token is already running.
  assert.deepEqual(native.calls, [
    { mode: "worker", tokens: 3 },
    { mode: "worker", tokens: 1 },
  ]);
  assert.deepEqual(slot.tokens, [2, 3, 4, 7]);
  assert.equal(await loop.gate(slot), undefined, "no gate for a continued slot");
  assert.equal(await loop.evaluate(slot, [first], sample, never), 7);
  // Taken, not queued again; and a token that may not continue is not decoded ahead.
  assert.equal(native.calls.length, 2);
  assert.equal(calls.n, 2);
  assert.deepEqual(loop.steps, { inline: 0, worker: 2, pipelined: 1 });
  loop.leave(slot);
  await loop.drained();
  assert.equal(native.calls.length, 2);
});

test("a loop that leaves without taking its continuation drops it: the token stays decoded in the slot, nothing is sampled after it", async () => {
  const { native, events: dropped, loop, slot, calls, sample } = await oneContinued();
  loop.leave(slot);
  await loop.drained();
  assert.deepEqual(native.log, ["add 0@0+3", "decoded", "add 0@3+1", "decoded"]);
  assert.deepEqual(slot.tokens, [2, 3, 4, 7], "what the slot holds is what its KV cache holds");
  assert.equal(calls.n, 1);
  assert.deepEqual(dropped, ["step", "dropped"]);
  // The slot's next request goes on from there.
  loop.enter();
  assert.equal(await loop.evaluate(slot, [9 as Token], sample, never), 7);
  assert.equal(native.log.at(-2), "add 0@4+1");
  loop.leave(slot);
});

test("a loop that knows it ends drops its continuation at once: the step decoding it ends before the loop leaves", async () => {
  const { native, events, loop, slot, calls } = await oneContinued();
  // A stop string: the loop's last text goes to its client, which may hold it; no step waits for that.
  loop.drop(slot);
  await loop.drained();
  assert.deepEqual(native.log, ["add 0@0+3", "decoded", "add 0@3+1", "decoded"]);
  assert.equal(calls.n, 1, "the dropped continuation's row is never sampled");
  loop.leave(slot);
  assert.deepEqual(events, ["step", "dropped"], "leave drops nothing more");
});

test("a step stays full: a continuation waits for a slot that does not continue, and leaves the queue when its loop leaves", async () => {
  const native = new RecordingNativeContext();
  const loop = pipelined(native);
  const [a, b] = [new Slot(0), new Slot(1)];
  loop.enter();
  loop.enter();
  const [ta, tb] = await Promise.all([
    loop.evaluate(a, prompt(2), () => Promise.resolve(7), always),
    loop.evaluate(b, prompt(2), () => Promise.resolve(8), never),
  ]);
  assert.deepEqual([ta, tb], [7, 8]);
  // b has to queue its token before the next step: a's continuation waits in the queue, undecoded.
  assert.equal(native.calls.length, 1);
  assert.equal(a.tokens.length, 2);
  loop.leave(a);
  loop.leave(b);
  await loop.drained();
  assert.equal(native.calls.length, 1, "a dropped queued continuation is never decoded");
  assert.deepEqual(loop.steps.pipelined, 0);
});

test("KV-cache edits asked during a pipelined step run after it, and the step after them is not pipelined", async () => {
  const native = new RecordingNativeContext();
  const loop = pipelined(native);
  const [slot, other] = [new Slot(0), new Slot(1)];
  other.tokens.push(5 as Token, 6 as Token);
  loop.enter();
  const first = await loop.evaluate(slot, prompt(3), () => Promise.resolve(7), always);
  // The continuation decodes now; the cut waits for it.
  const cut = loop.truncate(other, () => 1);
  const second = await loop.evaluate(slot, [first], () => Promise.resolve(7), always);
  await cut;
  assert.deepEqual(native.log, ["add 0@0+3", "decoded", "add 0@3+1", "decoded", "remove 1[1,2)"]);
  // The edit stopped the pipeline for one step: the token is queued the ordinary way.
  assert.equal(await loop.evaluate(slot, [second], () => Promise.resolve(7), never), 7);
  assert.deepEqual(native.log.slice(5), ["add 0@4+1", "decoded"]);
  loop.leave(slot);
  await loop.drained();
});

test("a failed pipelined decode fails the continuation when its loop takes it, and clears the slot", async () => {
  const native = new RecordingNativeContext();
  const loop = pipelined(native);
  const slot = new Slot(0);
  loop.enter();
  const failing = native as unknown as { decodeBatch: () => Promise<void> };
  const decode = failing.decodeBatch.bind(native);
  let n = 0;
  failing.decodeBatch = () => (++n === 2 ? Promise.reject(new Error("decode failed")) : decode());
  const first = await loop.evaluate(slot, prompt(3), () => Promise.resolve(7), always);
  await assert.rejects(
    loop.evaluate(slot, [first], () => Promise.resolve(7), always),
    /decode failed/,
  );
  assert.equal(slot.tokens.length, 0);
  loop.leave(slot);
  await loop.drained();
});

test("with batched sampling, a pipelined step samples the rows of continuations taken during its decode in one call", async () => {
  const native = new RecordingNativeContext({ batchSampling: true });
  const loop = pipelined(native);
  const slots = [new Slot(0), new Slot(1)];
  const sampler = native.createSampler();
  const sample = (row: number) => loop.sampleToken(row, sampler);
  for (const _ of slots) loop.enter();
  const first = await Promise.all(slots.map((s) => loop.evaluate(s, prompt(2), sample, always)));
  // Both loops take their continuation while it decodes.
  await Promise.all(slots.map((s, i) => loop.evaluate(s, [first[i]!], sample, never)));
  assert.deepEqual(
    native.log.filter((l) => l.startsWith("sample")),
    ["sample rows 1,1", "sample rows 0,0"],
  );
  for (const s of slots) loop.leave(s);
  await loop.drained();
});

test("a continuation taken after its decode ended is sampled then, with the sampling its loop gives when it takes it", async () => {
  const native = new RecordingNativeContext();
  const loop = pipelined(native);
  const slot = new Slot(0);
  loop.enter();
  const first = await loop.evaluate(slot, prompt(3), () => Promise.resolve(7), always);
  // The loop is still busy with its token when the continuation's decode ends: the row waits for it.
  while (native.log.length < 4) await new Promise((r) => setImmediate(r));
  assert.deepEqual(native.log, ["add 0@0+3", "decoded", "add 0@3+1", "decoded"]);
  assert.equal(await loop.evaluate(slot, [first], () => Promise.resolve(9), never), 9);
  assert.equal(native.calls.length, 2);
  loop.leave(slot);
  await loop.drained();
});
