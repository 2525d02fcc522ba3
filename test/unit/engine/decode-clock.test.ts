import { test } from "node:test";
import assert from "node:assert/strict";
import { DecodeClock, timedContext } from "../../../server/engine/decode-clock.ts";
import type { NativeContext, NativeSampler } from "../../../server/engine/native/port.ts";

type Report = [decode: number, idle: number, sampling: number, jsBusy: number];

/**
 * A clock on a hand-moved time (ms) and JS thread's active time (`busy` adds to it), and the seconds it reported:
 * decode, idle, sampling, the JS thread busy during worker decodes.
 */
function clocked() {
  let t = 0,
    active = 0;
  const reports: Report[] = [];
  const generation: boolean[] = [];
  const clock = new DecodeClock(
    (r) => {
      reports.push([r.decode, r.idle, r.sampling, r.jsBusy]);
      generation.push(r.generation);
    },
    () => t,
    () => active,
  );
  const totals = () => reports.reduce((sum, r) => sum.map((x, i) => round(x + r[i]!)) as Report, [0, 0, 0, 0]);
  const at = (ms: number) => void (t = ms);
  return { clock, reports, generation, totals, at, busy: (ms: number) => void (active += ms) };
}
const round = (x: number) => Math.round(x * 1e6) / 1e6;

test("decode time is each call's; idle time runs from the work's start or a call's end to the next call's start", () => {
  const { clock, reports, totals, at } = clocked();
  at(100);
  clock.setWork(true);
  at(103);
  clock.started(false, true);
  at(113);
  clock.ended();
  assert.deepEqual(reports, [[0.01, 0.003, 0, 0]], "10 ms decoding after 3 ms waiting");
  at(115);
  clock.sampling(() => at(117));
  at(118);
  clock.started(false, true);
  at(128);
  clock.ended();
  assert.deepEqual(totals(), [0.02, 0.008, 0.002, 0], "the second wait: 5 ms, 2 of them sampling");
});

test("no idle time without work: neither before the first request nor after the last one left", () => {
  const { clock, reports, totals, at } = clocked();
  at(50);
  clock.sampling(() => at(60));
  clock.setWork(true);
  at(70);
  clock.started(false, true);
  at(80);
  clock.ended();
  at(84);
  clock.setWork(false);
  assert.deepEqual(reports.at(-1), [0, 0.004, 0, 0], "the wait after the last call, reported when the work ended");
  at(1000);
  clock.started(false, true);
  at(1010);
  clock.ended();
  at(5000);
  clock.setWork(false);
  assert.deepEqual(totals(), [0.02, 0.014, 0, 0], "a call without work (a step ending after its streams) decodes only");
});

test("work that ends and starts during a call: the wait starts at the call's end; a sampling call overlapping a decode is not idle", () => {
  const { clock, totals, at } = clocked();
  clock.setWork(true);
  clock.started(true, true);
  at(5);
  clock.setWork(false);
  clock.sampling(() => at(7));
  clock.setWork(true);
  at(10);
  clock.ended();
  at(12);
  clock.started(false, true);
  at(20);
  clock.ended();
  assert.deepEqual(totals(), [0.018, 0.002, 0, 0]);
});

test("a decode on a worker: the JS thread's busy time meanwhile, never more than the call's", () => {
  const { clock, totals, at, busy } = clocked();
  busy(100);
  clock.started(true, true);
  busy(4);
  at(10);
  clock.ended();
  assert.deepEqual(totals(), [0.01, 0, 0, 0.004]);
  clock.started(true, true);
  busy(30);
  at(20);
  clock.ended();
  assert.deepEqual(totals(), [0.02, 0, 0, 0.014], "busy until after the result came: the call's 10 ms");
});

test("timedContext: decodes (on a worker, inline, failing) and sampling calls reach the clock; the rest is the port's", async () => {
  const { clock, totals, generation, at, busy } = clocked();
  const sampler = {} as NativeSampler;
  const calls: string[] = [];
  const native = {
    batchSize: 512,
    initBatch: () => calls.push("init"),
    addToBatch: (sequenceId: number) => {
      calls.push(`add ${sequenceId}`);
      return Uint32Array.of(0);
    },
    decodeBatch: async () => {
      at(10);
      busy(3);
      calls.push("decode");
    },
    decodeBatchInline: () => {
      at(30);
      busy(6);
      throw new Error("decode failed");
    },
    sampleToken: (row: number) => {
      at(14);
      return Promise.resolve(row);
    },
    sampleTokens: (rows: Uint32Array) => {
      at(22);
      return [...rows];
    },
  } as unknown as NativeContext;
  const timed = timedContext(native, clock);
  assert.equal(timed.batchSize, 512);
  clock.setWork(true);
  timed.initBatch(2);
  for (const id of [0, 1]) timed.addToBatch(id, 5, Uint32Array.of(9), Uint32Array.of(0));
  await timed.decodeBatch();
  assert.equal(await timed.sampleToken(7, sampler), 7);
  at(20);
  assert.deepEqual(timed.sampleTokens!(Uint32Array.of(1, 2), [sampler, sampler]), [1, 2]);
  at(24);
  timed.initBatch(3);
  timed.addToBatch(0, 6, Uint32Array.of(9, 9, 9), Uint32Array.of(2));
  assert.throws(() => timed.decodeBatchInline!(), /decode failed/);
  assert.deepEqual(calls, ["init", "add 0", "add 1", "decode", "init", "add 0"]);
  assert.deepEqual(generation, [true, false], "a token for each of 2 sequences, then a 3-token prompt");
  assert.deepEqual(
    totals(),
    [0.016, 0.014, 0.006, 0.003],
    "decodes 0–10 and 24–30; idle 10–24, sampling 10–14 and 20–22; the JS thread busy 3 ms of the worker's decode (an inline decode's: all of it, not counted)",
  );
});
