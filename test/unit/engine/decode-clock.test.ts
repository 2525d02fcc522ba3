import { test } from "node:test";
import assert from "node:assert/strict";
import { DecodeClock, timedContext } from "../../../server/engine/decode-clock.ts";
import type { NativeContext, NativeSampler } from "../../../server/engine/native/port.ts";

/** A clock on a hand-moved time (ms), and the seconds it reported: decode, idle, sampling. */
function clocked() {
  let t = 0;
  const reports: Array<[number, number, number]> = [];
  const clock = new DecodeClock(
    (...r) => reports.push(r),
    () => t,
  );
  const totals = () =>
    reports.reduce(
      ([d, i, s], [rd, ri, rs]) => [round(d + rd), round(i + ri), round(s + rs)] as [number, number, number],
      [0, 0, 0] as [number, number, number],
    );
  return { clock, reports, totals, at: (ms: number) => void (t = ms) };
}
const round = (x: number) => Math.round(x * 1e6) / 1e6;

test("decode time is each call's; idle time runs from the work's start or a call's end to the next call's start", () => {
  const { clock, reports, totals, at } = clocked();
  at(100);
  clock.setWork(true);
  at(103);
  clock.started();
  at(113);
  clock.ended();
  assert.deepEqual(reports, [[0.01, 0.003, 0]], "10 ms decoding after 3 ms waiting");
  at(115);
  clock.sampling(() => at(117));
  at(118);
  clock.started();
  at(128);
  clock.ended();
  assert.deepEqual(totals(), [0.02, 0.008, 0.002], "the second wait: 5 ms, 2 of them sampling");
});

test("no idle time without work: neither before the first request nor after the last one left", () => {
  const { clock, reports, totals, at } = clocked();
  at(50);
  clock.sampling(() => at(60));
  clock.setWork(true);
  at(70);
  clock.started();
  at(80);
  clock.ended();
  at(84);
  clock.setWork(false);
  assert.deepEqual(reports.at(-1), [0, 0.004, 0], "the wait after the last call, reported when the work ended");
  at(1000);
  clock.started();
  at(1010);
  clock.ended();
  at(5000);
  clock.setWork(false);
  assert.deepEqual(totals(), [0.02, 0.014, 0], "a call without work (a step ending after its streams) decodes only");
});

test("work that ends and starts during a call: the wait starts at the call's end; a sampling call overlapping a decode is not idle", () => {
  const { clock, totals, at } = clocked();
  clock.setWork(true);
  clock.started();
  at(5);
  clock.setWork(false);
  clock.sampling(() => at(7));
  clock.setWork(true);
  at(10);
  clock.ended();
  at(12);
  clock.started();
  at(20);
  clock.ended();
  assert.deepEqual(totals(), [0.018, 0.002, 0]);
});

test("timedContext: decodes (on a worker, inline, failing) and sampling calls reach the clock; the rest is the port's", async () => {
  const { clock, totals, at } = clocked();
  const sampler = {} as NativeSampler;
  const calls: string[] = [];
  const native = {
    batchSize: 512,
    decodeBatch: async () => {
      at(10);
      calls.push("decode");
    },
    decodeBatchInline: () => {
      at(30);
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
  await timed.decodeBatch();
  assert.equal(await timed.sampleToken(7, sampler), 7);
  at(20);
  assert.deepEqual(timed.sampleTokens!(Uint32Array.of(1, 2), [sampler, sampler]), [1, 2]);
  at(24);
  assert.throws(() => timed.decodeBatchInline!(), /decode failed/);
  assert.deepEqual(calls, ["decode"]);
  assert.deepEqual(totals(), [0.016, 0.014, 0.006], "decodes 0–10 and 24–30; idle 10–24, sampling 10–14 and 20–22");
});
