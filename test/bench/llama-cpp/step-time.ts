// Where Gantry's decode steps spent their time in a bench run, from its own /metrics (decode-clock.ts): per step, the
// milliseconds with a decode call in flight and those with none while the model had work (what the accelerator waited
// for: the rows' sampling, and the rest), and the share of steps started pipelined. On a GPU, a generation step's
// decode ms (its calls alone, no prompt) set against llama-batched-bench's step time at the same stream count says
// whether the decode itself is slower; idle ms per step is what the host adds to every step. JS busy: of a pipelined
// step's decode, the JS thread's busy time (the streams' JavaScript overlapping it); near the decode's, the decode's
// result waited for that thread.
import type { BatchedBenchRow } from "./batched-bench.ts";
import { median } from "../table.ts";
import type { DecodeCounters } from "./targets.ts";

/** A run's figures per decode step (the prompts' steps included). */
export interface StepTime {
  steps: number;
  decodeMs: number;
  /** Per generation step's call (one token per sequence, no prompt): decode ms. */
  generationDecodeMs: number;
  /** Of decodeMs, on a worker thread: the JS thread busy. */
  jsBusyMs: number;
  idleMs: number;
  /** Of idleMs, in the rows' sampling calls. */
  samplingMs: number;
  /** Steps started pipelined / steps. */
  pipelinedShare: number;
}

/** A run's step time from the counters before and after it; undefined for a server without Gantry's. Pure. */
export function stepTimeOf(before: DecodeCounters, after: DecodeCounters): StepTime | undefined {
  const b = before.gantry,
    a = after.gantry;
  const steps = after.steps - before.steps;
  if (!a || !b || steps <= 0) return undefined;
  const perStep = (seconds: number) => (1000 * seconds) / steps;
  return {
    steps,
    decodeMs: perStep(a.decodeSeconds - b.decodeSeconds),
    generationDecodeMs: (1000 * (a.generationSeconds - b.generationSeconds)) / (a.generationCalls - b.generationCalls),
    jsBusyMs: perStep(a.jsBusySeconds - b.jsBusySeconds),
    idleMs: perStep(a.idleSeconds - b.idleSeconds),
    samplingMs: perStep(a.samplingSeconds - b.samplingSeconds),
    pipelinedShare: (a.pipelined - b.pipelined) / steps,
  };
}

/**
 * "decode 10.20 (generation step 9.81, JS busy 3.02) + idle 6.20 (sampling 2.10) ms/step, 99% pipelined": a run's
 * progress line.
 */
export function stepTimeLine(t: StepTime): string {
  return `decode ${t.decodeMs.toFixed(2)} (generation step ${t.generationDecodeMs.toFixed(2)}, JS busy ${t.jsBusyMs.toFixed(2)}) + idle ${t.idleMs.toFixed(2)} (sampling ${t.samplingMs.toFixed(2)}) ms/step, ${(100 * t.pipelinedShare).toFixed(0)}% pipelined`;
}

/** One row of the table: a model's run (its label), the rounds' step times, and the ceiling at its stream count. */
export interface StepTimeRow {
  model: string;
  run: string;
  streams: number;
  times: StepTime[];
}

/** llama-batched-bench's milliseconds per generation step at `streams` (streams / S_TG), if it ran there. */
const ceilingStepMs = (streams: number, ceiling: BatchedBenchRow[]): number | undefined => {
  const c = ceiling.find((r) => r.pl === streams);
  return c ? (1000 * streams) / c.speedTg : undefined;
};

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");

/** The table of Gantry's step time per run, medians over the rounds; with `ceiling`, its step time beside. Pure. */
export function stepTimeTable(rows: StepTimeRow[], rounds: number, ceiling?: Map<string, BatchedBenchRow[]>) {
  const withCeiling = ceiling !== undefined;
  return {
    title: `Gantry's decode steps, from its /metrics over each run (median of ${rounds} rounds, ms per step, the prompts' steps included): decode = a decode call in flight (generation step: a call of one token per stream alone, no prompt; JS busy: of that, on a worker thread, the JS thread busy; near decode, results waited for it); idle = none in flight while requests had work, what the accelerator waits for (sampling: the rows' sampling calls; other: the rest, the streams' JavaScript where a step waits for it, scheduling, a request's preparation); pipelined: steps started before their streams had their tokens${withCeiling ? "; ceiling: llama-batched-bench's generation step at the same stream count (streams / S_TG), what a generation step's decode takes at llama.cpp's own speed" : ""}`,
    header: [
      "model",
      "run",
      "steps",
      "decode ms/step",
      "generation step decode ms",
      "JS busy in decode",
      "idle ms/step",
      "idle: sampling",
      "idle: other",
      "decode + idle",
      "pipelined",
      ...(withCeiling ? ["ceiling ms/step", "generation step ÷ ceiling step"] : []),
    ],
    rows: rows.map((r) => {
      const med = (f: (t: StepTime) => number) => median(r.times.map(f));
      const decode = med((t) => t.decodeMs),
        generation = med((t) => t.generationDecodeMs),
        idle = med((t) => t.idleMs),
        sampling = med((t) => t.samplingMs);
      const c = withCeiling ? ceilingStepMs(r.streams, ceiling.get(r.model) ?? []) : undefined;
      return [
        r.model,
        r.run,
        Number.isFinite(med((t) => t.steps)) ? med((t) => t.steps).toFixed(0) : "-",
        ms(decode),
        ms(generation),
        ms(med((t) => t.jsBusyMs)),
        ms(idle),
        ms(sampling),
        ms(med((t) => t.idleMs - t.samplingMs)),
        ms(med((t) => t.decodeMs + t.idleMs)),
        Number.isFinite(med((t) => t.pipelinedShare)) ? `${(100 * med((t) => t.pipelinedShare)).toFixed(0)}%` : "-",
        ...(withCeiling
          ? [
              c === undefined ? "-" : ms(c),
              c === undefined || !Number.isFinite(generation) ? "-" : (generation / c).toFixed(2),
            ]
          : []),
      ];
    }),
  };
}
