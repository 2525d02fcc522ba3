// Loaded into the `gantry serve` that `npm run bench step` measures (node --import): counts the JS thread's CPU time
// inside the slot loop's decode calls (StepCalls.decode, step-call.ts; an inline decode runs on this thread and is a
// compute thread of the step) and the wall time while a decode is in flight (inline, or on a worker until its result is
// back), its time inside the samplers' calls and the step's batched sampling call (plain sampling runs on this thread,
// and in the batched call on the threadpool's other threads too), and its CPU time in all. The sampling calls are
// short and synchronous, often right after the thread woke: their time is read off the wall clock, since the thread's
// CPU clock (getrusage) only moves when the scheduler updates it (a 1.5 ms spin after a sleep read 0.6 ms on average).
// SIGUSR2 starts a measured window, a second SIGUSR2 ends it and writes the figures as JSON to GANTRY_STEP_PROBE_OUT.
// Benchmarks only: it wraps methods of the engine's classes from outside.
import fs from "node:fs";
import { SampleBatch } from "../../server/engine/sample-batch.ts";
import { StepCalls } from "../../server/engine/step-call.ts";
import { TokenSampler } from "../../server/engine/token-sampler.ts";

export interface ProbeWindow {
  /** The JS thread's CPU time over the window, and the part of it inside decode calls, µs. */
  threadCpuUs: number;
  decodeCpuUs: number;
  /** Wall time with a decode in flight (from the call until its result is back), µs. */
  decodeWallUs: number;
  /** Wall time from a decode's result to the next decode's call (no decode in flight between two), µs, and the gaps. */
  gapWallUs: number;
  gaps: number;
  /**
   * Time inside TokenSampler.sample (its synchronous part: all of an inline sampling call) and SampleBatch's batched
   * call (this thread's share of it), and the sample calls.
   */
  sampleCpuUs: number;
  samples: number;
  wallUs: number;
  /** V8's monotonic clock (process.hrtime, µs) at the window's start and end, to cut the profile. */
  fromUs: number;
  toUs: number;
}

const out = process.env.GANTRY_STEP_PROBE_OUT;
if (!out) throw new Error("step-probe: GANTRY_STEP_PROBE_OUT is not set");
const cpuUs = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

const proto = StepCalls.prototype as unknown as { decode?: (tokens: number) => Promise<void> };
const decode = proto.decode;
if (typeof decode !== "function") throw new Error("step-probe: StepCalls has no decode method to measure");
let decodeCpuUs = 0,
  decodeWallUs = 0,
  gapWallUs = 0,
  gaps = 0;
let lastBack: number | undefined;
proto.decode = function (this: StepCalls, tokens: number): Promise<void> {
  const c0 = cpuUs(),
    w0 = nowUs();
  if (lastBack !== undefined) {
    gapWallUs += w0 - lastBack;
    gaps++;
  }
  // The synchronous part: all of an inline decode, the hand-off of a worker's.
  const done = decode.call(this, tokens);
  decodeCpuUs += cpuUs() - c0;
  // A worker's decode is in flight until its result is back (with the step pipeline the JS thread works meanwhile).
  const back = () => {
    lastBack = nowUs();
    decodeWallUs += lastBack - w0;
  };
  done.then(back, back);
  return done;
};

const sampler = TokenSampler.prototype as unknown as { sample?: (...args: unknown[]) => Promise<number> };
const sample = sampler.sample;
if (typeof sample !== "function") throw new Error("step-probe: TokenSampler has no sample method to measure");
let sampleCpuUs = 0,
  samples = 0;
sampler.sample = function (this: TokenSampler, ...args: unknown[]): Promise<number> {
  const t0 = nowUs();
  const token = sample.apply(this, args);
  sampleCpuUs += nowUs() - t0;
  samples++;
  return token;
};

const batch = SampleBatch.prototype as unknown as { sampleRows?: (...args: unknown[]) => void };
const sampleRows = batch.sampleRows;
if (typeof sampleRows !== "function") throw new Error("step-probe: SampleBatch has no sampleRows method to measure");
batch.sampleRows = function (this: SampleBatch, ...args: unknown[]): void {
  const t0 = nowUs();
  sampleRows.apply(this, args);
  sampleCpuUs += nowUs() - t0;
};

let start:
  | {
      cpu: number;
      wall: number;
      decodeCpu: number;
      decodeWall: number;
      gapWall: number;
      gaps: number;
      sampleCpu: number;
      samples: number;
    }
  | undefined;
process.on("SIGUSR2", () => {
  if (!start) {
    // Gaps within the window only: not the one since the warm-up's last decode.
    lastBack = undefined;
    start = {
      cpu: cpuUs(),
      wall: nowUs(),
      decodeCpu: decodeCpuUs,
      decodeWall: decodeWallUs,
      gapWall: gapWallUs,
      gaps,
      sampleCpu: sampleCpuUs,
      samples,
    };
    return;
  }
  const to = nowUs();
  const w: ProbeWindow = {
    threadCpuUs: cpuUs() - start.cpu,
    decodeCpuUs: decodeCpuUs - start.decodeCpu,
    decodeWallUs: decodeWallUs - start.decodeWall,
    gapWallUs: gapWallUs - start.gapWall,
    gaps: gaps - start.gaps,
    sampleCpuUs: sampleCpuUs - start.sampleCpu,
    samples: samples - start.samples,
    wallUs: to - start.wall,
    fromUs: start.wall,
    toUs: to,
  };
  start = undefined;
  // Whole or not at all: the bench reads the file as soon as it exists.
  fs.writeFileSync(`${out}.tmp`, JSON.stringify(w));
  fs.renameSync(`${out}.tmp`, out);
});
