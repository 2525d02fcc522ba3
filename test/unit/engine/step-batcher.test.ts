// The step batcher's choice of where a decode runs (inline on the JS thread or on a libuv worker), over a recording
// fake
// of the native context. The real addon's inline decode is tested in test/integration/engine/native-build.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { DecodeSync } from "../../../server/engine/decode-sync.ts";
import { Slot, StepBatcher, type NativeContext } from "../../../server/engine/step-batcher.ts";

class FakeNative implements NativeContext {
  readonly calls: Array<{ mode: "inline" | "worker"; tokens: number }> = [];
  /** Every native call that touches a sequence, in order. */
  readonly log: string[] = [];
  failCopy = false;
  private decodeStarted: (() => void) | undefined;
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

  addToBatch(seq: number, first: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array {
    this.log.push(`add ${seq}@${first}+${tokens.length}`);
    return Uint32Array.from(logitIndexes);
  }

  /** Resolves when the next worker decode starts. */
  nextDecode(): Promise<void> {
    return new Promise((resolve) => {
      this.decodeStarted = resolve;
    });
  }

  decodeBatch(): Promise<void> {
    this.calls.push({ mode: "worker", tokens: this.batch });
    this.decodeStarted?.();
    return new Promise((resolve) =>
      setImmediate(() => {
        this.log.push("decoded");
        resolve();
      }),
    );
  }

  copySequenceStateFromOtherSequence(target: number, source: number): Promise<number> {
    this.log.push(`copy ${source}→${target}`);
    return new Promise((resolve, reject) =>
      setImmediate(() => (this.failCopy ? reject(new Error("copy failed")) : resolve(0))),
    );
  }

  private decodeInline(): void {
    this.calls.push({ mode: "inline", tokens: this.batch });
    if (this.failInline) throw new Error("Eval has failed");
    const until = performance.now() + this.inlineMs;
    while (performance.now() < until) {
      /* a slow decode */
    }
  }

  sampleToken(): Promise<number> {
    return Promise.resolve(1);
  }

  disposeSequence(seq: number): void {
    this.log.push(`dispose ${seq}`);
  }

  removeTokenCellsFromSequence(seq: number, start: number, end: number): boolean {
    this.log.push(`remove ${seq}[${start},${end})`);
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
  assert.deepEqual(native.calls, [
    { mode: "worker", tokens: 20 },
    { mode: "inline", tokens: 1 },
    { mode: "inline", tokens: 3 },
  ]);
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
  assert.deepEqual(
    native.calls.map((c) => c.mode),
    ["inline", "worker", "worker"],
  );
  // Worker steps are quick: the average falls under the bound and steps decode inline again.
  native.inlineMs = 0;
  for (let i = 0; i < 20; i++) await batcher.evaluate(slot, [1 as Token], next);
  assert.equal(native.calls.at(-1)!.mode, "inline");
});

test("without the patched addon's inline decode, or with the policy off, every step decodes on a worker", async () => {
  for (const [native, policy] of [
    [new FakeNative(false), { maxTokens: 4, maxStepMs: 100 }],
    [new FakeNative(), undefined],
  ] as const) {
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

test("a sequence moves into a free one's place between steps: they trade ids, and the free one keeps the moved state as its cache", async () => {
  const native = new FakeNative(false);
  const batcher = new StepBatcher(native, 512, new DecodeSync({}));
  const [busy, free] = [new Slot(3), new Slot(1)];
  free.tokens.push(9 as Token);
  await batcher.evaluate(busy, tokens(4), next);
  // Asked while a step is in flight: the copy waits for that step, and the next step waits for the copy.
  const started = native.nextDecode();
  const stepping = batcher.evaluate(busy, [7 as Token], next);
  await started;
  const moved = batcher.relocate(busy, free);
  await stepping;
  await moved;
  await batcher.evaluate(busy, [7 as Token], next);
  assert.deepEqual(native.log.slice(2), ["add 3@4+1", "decoded", "copy 3→1", "add 1@5+1", "decoded"]);
  assert.deepEqual([busy.id, free.id], [1, 3]);
  assert.deepEqual(free.tokens, busy.tokens.slice(0, 5));
});

test("a truncate queued after a move sees what the slot holds after the move", async () => {
  const native = new FakeNative(false);
  const batcher = new StepBatcher(native, 512, new DecodeSync({}));
  const [busy, free] = [new Slot(2), new Slot(1)];
  free.tokens.push(9 as Token, 9 as Token, 9 as Token);
  await batcher.evaluate(busy, tokens(4), next);
  const moved = batcher.relocate(busy, free);
  // A new request on the free slot whose prompt starts like the moved state (tokens 2, 3, then 8).
  await batcher.truncate(free, (held) => (held[0] === 2 && held[1] === 3 ? 2 : 0));
  await moved;
  assert.deepEqual(native.log.slice(2), ["copy 2→1", "remove 2[2,4)"]);
  assert.deepEqual(free.tokens, [2, 3]);
});

test("a failed move leaves both ids alone and drops what the free slot held", async () => {
  const native = new FakeNative(false);
  const batcher = new StepBatcher(native, 512, new DecodeSync({}));
  const [busy, free] = [new Slot(2), new Slot(1)];
  free.tokens.push(9 as Token);
  native.failCopy = true;
  await assert.rejects(batcher.relocate(busy, free), /copy failed/);
  assert.deepEqual([busy.id, free.id, free.tokens.length], [2, 1, 0]);
  assert.deepEqual(native.log, ["copy 2→1", "dispose 1"]);
  assert.equal(await batcher.evaluate(busy, tokens(2), next), 7, "the batcher goes on");
});
