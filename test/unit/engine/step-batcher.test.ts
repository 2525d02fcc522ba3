// The step batcher's choice of where a decode runs (inline on the JS thread or on a libuv worker), over a recording fake
// of the native context. The real addon's inline decode is tested in test/integration/engine/native-build.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { DecodeSync } from "../../../server/engine/decode-sync.ts";
import { Slot, StepBatcher, type NativeContext } from "../../../server/engine/step-batcher.ts";

class FakeNative implements NativeContext {
  readonly calls: Array<{ mode: "inline" | "worker"; tokens: number }> = [];
  inlineMs = 0;
  failInline = false;
  private batch = 0;
  /** Absent, as in the prebuilt addon, with `patched` false. */
  readonly decodeBatchInline: (() => void) | undefined;

  constructor(patched = true) {
    this.decodeBatchInline = patched ? () => this.decodeInline() : undefined;
  }

  initBatch(size: number): void {
    this.batch = size;
  }

  addToBatch(_seq: number, _first: number, _tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array {
    return Uint32Array.from(logitIndexes);
  }

  decodeBatch(): Promise<void> {
    this.calls.push({ mode: "worker", tokens: this.batch });
    return new Promise((resolve) => setImmediate(resolve));
  }

  private decodeInline(): void {
    this.calls.push({ mode: "inline", tokens: this.batch });
    if (this.failInline) throw new Error("Eval has failed");
    const until = performance.now() + this.inlineMs;
    while (performance.now() < until) { /* a slow decode */ }
  }

  sampleToken(): Promise<number> {
    return Promise.resolve(1);
  }

  disposeSequence(): void {}

  removeTokenCellsFromSequence(): boolean {
    return true;
  }
}

const tokens = (n: number): Token[] => Array.from({ length: n }, (_, i) => (i + 2) as Token);
const next = () => Promise.resolve(7);

test("small steps decode inline, prompt-sized steps on a worker", async () => {
  const native = new FakeNative();
  const batcher = new StepBatcher(native, 512, new DecodeSync({}), undefined, { maxTokens: 4, maxStepMs: 100 });
  assert.equal(batcher.inlineDecode, true);
  const slot = new Slot(0);
  assert.equal(await batcher.evaluate(slot, tokens(20), next), 7);
  assert.equal(await batcher.evaluate(slot, [7 as Token], next), 7);
  assert.equal(await batcher.evaluate(slot, tokens(3), next), 7);
  assert.deepEqual(native.calls, [{ mode: "worker", tokens: 20 }, { mode: "inline", tokens: 1 }, { mode: "inline", tokens: 3 }]);
  assert.deepEqual(batcher.steps, { inline: 2, worker: 1 });
  assert.equal(slot.tokens.length, 24);
});

test("small steps go back to a worker while they are slow, and inline again once they are quick", async () => {
  const native = new FakeNative();
  const batcher = new StepBatcher(native, 512, new DecodeSync({}), undefined, { maxTokens: 4, maxStepMs: 5 });
  const slot = new Slot(0);
  native.inlineMs = 20;
  await batcher.evaluate(slot, [1 as Token], next);
  // The first slow inline step (20 ms) puts the average over the bound: the next small steps decode on a worker.
  await batcher.evaluate(slot, [1 as Token], next);
  await batcher.evaluate(slot, [1 as Token], next);
  assert.deepEqual(native.calls.map((c) => c.mode), ["inline", "worker", "worker"]);
  // Worker steps are quick: the average falls under the bound and steps decode inline again.
  native.inlineMs = 0;
  for (let i = 0; i < 20; i++) await batcher.evaluate(slot, [1 as Token], next);
  assert.equal(native.calls.at(-1)!.mode, "inline");
});

test("without the patched addon's inline decode, or with the policy off, every step decodes on a worker", async () => {
  for (const [native, policy] of [[new FakeNative(false), { maxTokens: 4, maxStepMs: 100 }], [new FakeNative(), undefined]] as const) {
    const batcher = new StepBatcher(native, 512, new DecodeSync({}), undefined, policy);
    assert.equal(batcher.inlineDecode, false);
    await batcher.evaluate(new Slot(0), [1 as Token], next);
    assert.deepEqual(native.calls, [{ mode: "worker", tokens: 1 }]);
  }
});

test("a failed inline decode fails the step's items and clears their slots; the batcher goes on", async () => {
  const native = new FakeNative();
  const batcher = new StepBatcher(native, 512, new DecodeSync({}), undefined, { maxTokens: 4, maxStepMs: 100 });
  const slot = new Slot(0);
  await batcher.evaluate(slot, tokens(2), next);
  native.failInline = true;
  await assert.rejects(batcher.evaluate(slot, [1 as Token], next), /Eval has failed/);
  assert.equal(slot.tokens.length, 0);
  native.failInline = false;
  assert.equal(await batcher.evaluate(slot, tokens(2), next), 7);
});
