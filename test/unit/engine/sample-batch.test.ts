// The slot loop's batched sampling (SampleBatch) over the recording fake of the native port: the sampling calls a
// step's rows make as the step hands them over are one native call; a later call is a call of its own; a failed row
// fails its own request only. That the batched call draws the tokens of one call per row is tested on the real addon
// (test/integration/engine/batched-sampling.test.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { RecordingNativeContext } from "../../../server/engine/native/fake.ts";
import { SlotLoop } from "../../../server/engine/slot-loop.ts";

const tokens = (n: number): Token[] => Array.from({ length: n }, (_, i) => (i + 2) as Token);

/** Three slots' prompts of 1, 2 and 3 tokens in one step (batch logit rows 0, 1 and 2); resolves with each outcome. */
async function oneStep(native: RecordingNativeContext, sampleTwice = false) {
  const loop = new SlotLoop(native, { parallel: 3, maxQueue: 8 });
  const slots = await Promise.all([0, 1, 2].map(() => loop.acquire(undefined)));
  const sampler = native.createSampler();
  // Generation loops running: the step waits for all three prompts.
  for (const _ of slots) loop.enter();
  const outcomes = await Promise.allSettled(
    slots.map((slot, i) =>
      loop.evaluate(slot, tokens(i + 1), async (row) => {
        const token = await loop.sampleToken(row, sampler);
        // A second call once the first one's token is known (as a draft's next row).
        return sampleTwice && i === 2 ? loop.sampleToken(row, sampler) : token;
      }),
    ),
  );
  for (const _ of slots) loop.leave();
  return outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message));
}

test("a step's rows are sampled in one native call; a call after the hand-over is a call of its own", async () => {
  const native = new RecordingNativeContext({ inline: false, batchSampling: true });
  assert.deepEqual(await oneStep(native, true), [7, 7, 7]);
  assert.deepEqual(native.log.slice(3), ["decoded", "sample rows 0,1,2", "sample row 2"]);
});

test("a row the batched call fails fails its own request only", async () => {
  const native = new RecordingNativeContext({ inline: false, batchSampling: true });
  native.failRows.add(1);
  assert.deepEqual(await oneStep(native), [7, "row 1 failed", 7]);
});

test("without the batched call (the prebuilt addon) each row is sampled by a call of its own", async () => {
  const native = new RecordingNativeContext({ inline: false });
  assert.deepEqual(await oneStep(native), [7, 7, 7]);
  assert.deepEqual(native.log.slice(3), ["decoded", "sample row 0", "sample row 1", "sample row 2"]);
});
