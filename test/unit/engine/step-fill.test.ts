import { test } from "node:test";
import assert from "node:assert/strict";
import { StepFill } from "../../../server/engine/step-fill.ts";
import { bySequenceId, wholePromptsFirst, type StepItem } from "../../../server/engine/step-plan.ts";

const item = (n: number): StepItem => ({ tokens: Array(n).fill(1) });
/** Items of no known sequence: plans keep their order. */
const noId = (): undefined => undefined;

const amounts = (items: StepItem[], plan: ReturnType<typeof wholePromptsFirst>) =>
  items.map((it) => plan.find((p) => p.item === it)?.processAmount ?? 0);

/** Decodes a plan as the slot loop does: each item keeps the tokens not yet decoded (none, once it is done). */
function decoded(plan: ReturnType<typeof wholePromptsFirst>): void {
  for (const p of plan) (p.item as { tokens: StepItem["tokens"] }).tokens = p.item.tokens.slice(p.processAmount);
}

test("wholePromptsFirst: every generating sequence its token, then whole prompts shortest first while they fit", () => {
  const items = [item(1), item(300), item(1), item(150), item(100)];
  const plan = wholePromptsFirst(items, 256);
  assert.deepEqual(amounts(items, plan), [1, 0, 1, 150, 100], "the 300-token prompt waits for the next step");
  assert.deepEqual(
    plan.map((p) => p.item),
    [items[0], items[2], items[3], items[4]],
    "in the order given, waiting ones left out",
  );
});

test("wholePromptsFirst: a burst larger than the batch finishes most prompts in the first step, the rest in the next", () => {
  const burst = Array.from({ length: 8 }, () => item(77));
  const first = wholePromptsFirst(burst, 512);
  assert.deepEqual(
    amounts(burst, first),
    [77, 77, 77, 77, 77, 77, 0, 0],
    "ties in arrival order; no part-prompt beside whole ones",
  );
  // The six decoded ones generate; the other two prompts come next, whole.
  const next = [...Array.from({ length: 6 }, () => item(1)), burst[6]!, burst[7]!];
  assert.deepEqual(amounts(next, wholePromptsFirst(next, 512)), [1, 1, 1, 1, 1, 1, 77, 77]);
});

test("wholePromptsFirst: when no prompt fits whole, the shortest takes what is left; never more than the batch", () => {
  const items = [item(1), item(900), item(700), item(1)];
  const plan = wholePromptsFirst(items, 512);
  assert.deepEqual(amounts(items, plan), [1, 0, 510, 1]);
  const tiny = [item(10), item(10), item(10)];
  assert.deepEqual(amounts(tiny, wholePromptsFirst(tiny, 2)), [2, 0, 0]);
  const singles = [item(1), item(1), item(1)];
  assert.equal(wholePromptsFirst(singles, 2).length, 2);
});

test("planContinuation: a step of prompts only goes on with the prompts left, whole and shortest first, within the step cap", () => {
  const sync = new StepFill({});
  const burst = [item(77), item(200), ...Array.from({ length: 7 }, () => item(77))];
  const first = sync.planStep(burst, 512, noId);
  assert.deepEqual(amounts(burst, first), [77, 0, 77, 77, 77, 77, 77, 0, 0]);
  decoded(first);
  // The six done generate meanwhile (single-token items): they wait for the next step.
  const left = [...Array.from({ length: 6 }, () => item(1)), burst[1]!, burst[7]!, burst[8]!];
  const next = sync.planContinuation(left, 512, 462, 2048, noId);
  assert.deepEqual(amounts(left, next), [0, 0, 0, 0, 0, 0, 200, 77, 77]);
  assert.deepEqual(
    next.map((p) => p.item.tokens.length),
    [200, 77, 77],
    "in sequence order (unknown ids: the order given)",
  );
  // The step cap: 48 tokens left in the step cut the shortest prompt; none left ends the step.
  assert.deepEqual(amounts(left, sync.planContinuation(left, 512, 2000, 2048, noId)), [0, 0, 0, 0, 0, 0, 0, 48, 0]);
  assert.deepEqual(sync.planContinuation(left, 512, 2048, 2048, noId), []);
  assert.deepEqual(sync.planContinuation(left.slice(0, 6), 512, 462, 2048, noId), [], "no prompt left");
  assert.equal(sync.stats.decodes, 1, "one step");
  assert.equal(sync.stats.decodeCalls, 3);
});

test("planContinuation: a step that carried a generating sequence ends after its call", () => {
  const sync = new StepFill({});
  const items = [item(1), item(600)];
  const first = sync.planStep(items, 512, noId);
  assert.deepEqual(amounts(items, first), [1, 511]);
  decoded(first);
  assert.deepEqual(
    sync.planContinuation([items[1]!, item(89)], 512, 512, 2048, noId),
    [],
    "the generating stream's next token comes first",
  );
  // A step of one generating stream, with a prompt arriving during its decode.
  decoded(sync.planStep([item(1)], 512, noId));
  assert.deepEqual(
    sync.planContinuation([item(89)], 512, 1, 2048, noId),
    [],
    "the new prompt waits for the next step, beside the stream",
  );
});

test("a further call of a step reports as such, and its sequences do not hold the gate of those done before it", async () => {
  const sync = new StepFill({ maxWaitMs: 10_000 });
  const seen: boolean[] = [];
  sync.onDecode = (_b, _s, _a, continued) => seen.push(continued);
  for (let i = 0; i < 3; i++) {
    sync.enter();
    sync.beforeDecode();
  }
  const burst = [item(300), item(300), item(300)];
  const first = sync.planStep(burst, 512, noId);
  assert.equal(first.length, 1);
  decoded(first);
  sync.afterDecode(); // the first prompt is done; the other two are decoded in a further call
  const next = sync.planContinuation([item(1), burst[1]!, burst[2]!], 512, 300, 2048, noId);
  assert.equal(next.length, 1);
  // The first stream's next token queues now, for the next step, and its text goes out during the call.
  await sync.gate();
  assert.deepEqual(seen, [false, true]);
  assert.equal(sync.stats.gateTimeouts, 0);
});

/** n sequences queue one token each and the step carrying them is started. */
function stepInFlight(sync: StepFill, n: number): void {
  for (let i = 0; i < n; i++) {
    sync.enter();
    sync.beforeDecode();
  }
  sync.planStep(
    Array.from({ length: n }, () => item(1)),
    512,
    noId,
  );
}

test("the gate holds early sequences until the last one of the step has its token", async () => {
  const sync = new StepFill({ maxWaitMs: 10_000 });
  stepInFlight(sync, 3);
  sync.afterDecode();
  let released = false;
  const g = sync.gate()!.then(() => {
    released = true;
  });
  sync.afterDecode();
  await new Promise((r) => setImmediate(r));
  assert.equal(released, false);
  sync.afterDecode();
  await g;
  assert.equal(released, true);
});

test("a newcomer waits for the step in flight; sequences queued but not started do not hold the gate", async () => {
  const sync = new StepFill({ maxWaitMs: 10_000 });
  stepInFlight(sync, 2);
  sync.enter(); // a new request, about to queue its prompt
  let joined = false;
  const g = sync.gate()!.then(() => {
    joined = true;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(joined, false, "waits while the step is in flight");
  sync.beforeDecode(); // (as if) another newcomer queued and waits for its step to start: not in flight
  sync.afterDecode();
  sync.afterDecode();
  await g;
  assert.equal(sync.stats.gateTimeouts, 0);
});

test("the gate wait is bounded", async () => {
  const sync = new StepFill({ maxWaitMs: 5 });
  stepInFlight(sync, 2);
  sync.afterDecode();
  await sync.gate();
  assert.equal(sync.stats.gateTimeouts, 1);
});

test("a step starts once every active sequence queued, bounded", async () => {
  const sync = new StepFill({ maxWaitMs: 10_000 });
  sync.enter();
  sync.enter();
  sync.beforeDecode();
  let started = false;
  sync.whenFull(() => {
    started = true;
  });
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(started, false);
  sync.beforeDecode();
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(started, true);
});

test("planning a step counts decode steps and reports batch fill", () => {
  const sync = new StepFill({});
  const seen: number[][] = [];
  sync.onDecode = (batch, gen, active) => seen.push([batch, gen, active]);
  sync.enter();
  sync.enter();
  sync.planStep([item(1), item(1)], 512, noId);
  assert.deepEqual(seen, [[2, 2, 2]]);
  assert.equal(sync.stats.decodes, 1);
});

test("a sequence whose client is slow does not hold back the start of the others' step", async () => {
  const sync = new StepFill({ maxWaitMs: 10_000 });
  sync.enter();
  sync.enter();
  sync.suspend(); // the second sequence is handing text to a stalled client
  sync.beforeDecode();
  let started = false;
  sync.whenFull(() => {
    started = true;
  });
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(started, true);
});

test("a queued step starts as soon as the sequence it waited for leaves or suspends", async () => {
  for (const change of ["leave", "suspend"] as const) {
    const sync = new StepFill({ maxWaitMs: 10_000 });
    sync.enter();
    sync.enter();
    sync.beforeDecode();
    let started = false;
    sync.whenFull(() => {
      started = true;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(started, false, change);
    if (change === "leave") sync.leave();
    else sync.suspend();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.equal(started, true, change);
    assert.equal(sync.stats.startTimeouts, 0);
  }
});

test("the default wait bound is a safety net of a few decode steps, not a fraction of one", async () => {
  const sync = new StepFill({});
  sync.enter();
  sync.enter();
  sync.beforeDecode();
  let started = false;
  sync.whenFull(() => {
    started = true;
  });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(started, false, "still waiting for the second sequence after 10 ms");
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(started, true, "bounded");
  assert.equal(sync.stats.startTimeouts, 1);
});

test("a step's items are laid out in sequence id order (llama.cpp computes them in one run), whole prompts shortest first", () => {
  const sync = new StepFill({});
  const items = [item(1), item(1), item(5), item(1)];
  const ids = new Map([
    [items[0]!, 3],
    [items[1]!, 0],
    [items[2]!, 2],
    [items[3]!, 1],
  ]);
  const plan = sync.planStep(items, 512, (it) => ids.get(it));
  assert.deepEqual(
    plan.map((p) => ids.get(p.item)),
    [0, 1, 2, 3],
  );
  assert.deepEqual(
    bySequenceId([item(1), items[1]!], (it) => ids.get(it)).map((it) => ids.get(it)),
    [0, undefined],
    "unknown ones last",
  );
  const prompts = [item(40), item(1), item(30), item(500)];
  const pids = new Map([
    [prompts[0]!, 2],
    [prompts[1]!, 3],
    [prompts[2]!, 0],
    [prompts[3]!, 1],
  ]);
  assert.deepEqual(
    sync.planStep(prompts, 100, (it) => pids.get(it)).map((p) => [pids.get(p.item), p.processAmount]),
    [
      [0, 30],
      [2, 40],
      [3, 1],
    ],
  );
});
