// `npm run bench step`: the host time of a decode step, i.e. everything of a step outside the decode call itself
// (reading the logits and sampling, grammar and stop checks, detokenizing, streaming to the clients, scheduling), at
// 1, 8 and 32 streams, through `gantry serve`'s HTTP API with Ollama's default sampling. On a GPU that is the time
// the GPU waits between two decodes; here it is measured on the CPU with a model whose decode is short and whose
// vocabulary is Llama-3's 128k (BENCH_SHAPES.step), so what a 128k row costs to sample shows.
// How: the server runs under V8's sampling profiler (--cpu-prof, a sample every 100 µs of the JS thread's wall time);
// the samples taken while the streams run are put in parts by the innermost frame that names one (stepParts), and the
// step count comes from /metrics. Host time per step = the window's wall time less the decode call's samples, over the
// steps; the parts split it. The profiler costs a few percent; the parts are what to compare across changes.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { benchModelPath } from "../support/models.ts";
import { createModel, startTestServer } from "../support/server.ts";
import { counterTotal, SAMPLING } from "./llama-cpp/targets.ts";
import { postStreamingLines } from "./stream-client.ts";
import { settle } from "./settle.ts";
import type { Table } from "./llama-cpp/compare.ts";
import type { ProbeWindow } from "./step-probe.ts";
import type { StepPipelineSetting } from "../../server/common/step-pipeline-settings.ts";

const PROBE = path.join(import.meta.dirname, "step-probe.ts");

/** The parts of a step's host time, in table order; "decode" is the decode call itself (not host time). */
export const PARTS = [
  "sampling",
  "grammar and stops",
  "detokenize",
  "generation loop",
  "scheduling",
  "HTTP streaming",
  "GC",
  "idle (waiting)",
  "other",
] as const;
export type Part = (typeof PARTS)[number] | "decode";

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The part one frame names, if any (the innermost naming frame of a sample's stack decides). */
function partOf(f: CallFrame): Part | undefined {
  const fn = f.functionName;
  const file = f.url.slice(f.url.lastIndexOf("/") + 1);
  // A native call's time is its JS caller's: a step call's decode (step-probe.ts measures the same function).
  if (file === "step-call.ts" && fn === "decode") return "decode";
  if (fn === "(garbage collector)") return "GC";
  if (fn === "(idle)") return "idle (waiting)";
  if (fn === "sampleToken" || fn === "tokenLogits" || file === "token-sampler.ts" || file === "sample-batch.ts")
    return "sampling";
  if (/^(stop-matcher|output-plan|tool-grammar|grammars)\.ts$/.test(file) || fn === "acceptGrammarTokens")
    return "grammar and stops";
  if (fn === "detokenize" || file === "token-text-stream.ts") return "detokenize";
  if (/^(slot-loop|step-runner|step-call|step-fill|step-plan|slot-pool|decode-turns|arrivals)\.ts$/.test(file))
    return "scheduling";
  if (file === "generation.ts" || file === "engine.ts") return "generation loop";
  if (
    f.url.includes("/server/http/") ||
    f.url.includes("/server/chat/") ||
    /^node:(_http|net|internal\/(streams|http|stream_base))/.test(f.url) ||
    f.url.includes("/express/")
  )
    return "HTTP streaming";
  return undefined;
}

/**
 * Milliseconds of the profile's samples per part, for the samples whose time lies in [fromUs, toUs] (V8's monotonic
 * clock, the one process.hrtime reads). Pure.
 */
export function stepParts(profile: CpuProfile, fromUs: number, toUs: number): Map<Part, number> {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const partCache = new Map<number, Part>();
  const partOfNode = (id: number): Part => {
    const cached = partCache.get(id);
    if (cached) return cached;
    let part: Part = "other";
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const p = partOf(byId.get(at)!.callFrame);
      if (p) {
        part = p;
        break;
      }
    }
    partCache.set(id, part);
    return part;
  };
  const ms = new Map<Part, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    // A sample stands for the time up to the next one.
    const next = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1]! : 0;
    if (t < fromUs || t > toUs) continue;
    const part = partOfNode(profile.samples[i]!);
    ms.set(part, (ms.get(part) ?? 0) + next / 1000);
  }
  return ms;
}

export interface StepRow {
  streams: number;
  /** GANTRY_STEP_PIPELINE the server ran with. */
  pipeline: StepPipelineSetting;
  steps: number;
  /** Steps started with tokens their streams did not have yet (gantry_decode_steps_pipelined_total). */
  pipelinedSteps: number;
  tokens: number;
  wallMs: number;
  /** Wall time with a decode in flight per step, ms. */
  decodeMsPerStep: number;
  /** Wall time per step with no decode in flight (what a GPU would wait), µs. */
  hostWallUsPerStep: number;
  /** The same between one decode's result and the next decode's call only (no arrivals or endings), µs per gap. */
  gapWallUsPerStep: number;
  /** The JS thread's CPU time per step outside the decode calls, µs, and per sequence per step. */
  hostCpuUsPerStep: number;
  hostCpuUsPerSeqStep: number;
  /**
   * hostCpuUsPerSeqStep split by part: sampling as the probe measured it (the JS thread's time inside the samplers'
   * calls and the step's batched sampling call), the others in proportion to the profile's samples outside decode,
   * sampling and idle.
   */
  parts: Map<Part, number>;
}

const CPU_PARTS = PARTS.filter((p) => p !== "idle (waiting)");

async function streams(url: string, n: number, tokens: number): Promise<number> {
  const counts = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      let generated = 0;
      await postStreamingLines(
        `${url}/api/generate`,
        {
          model: "step",
          prompt: `Tell me a long story about the sea (${i})`,
          stream: true,
          options: { ...SAMPLING, num_predict: tokens, seed: i },
        },
        (line) => {
          const ev = JSON.parse(line) as { done?: boolean; eval_count?: number; error?: string };
          if (ev.error) throw new Error(ev.error);
          if (ev.done) generated = ev.eval_count ?? 0;
        },
      );
      return generated;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

const decodeSteps = async (url: string): Promise<{ all: number; pipelined: number }> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return {
    all: counterTotal(text, "gantry_decode_steps_total"),
    pipelined: counterTotal(text, "gantry_decode_steps_pipelined_total"),
  };
};

/** Sends the probe its signal (step-probe.ts) and, at a window's end, waits for its figures. */
async function probeWindow(pid: number, file: string, end: boolean): Promise<ProbeWindow | undefined> {
  process.kill(pid, "SIGUSR2");
  if (!end) return undefined;
  for (let i = 0; i < 200 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 25));
  return JSON.parse(fs.readFileSync(file, "utf8")) as ProbeWindow;
}

/**
 * One server per stream count (its own profile), `tokens` generated per stream after a warm-up run; `pipeline` sets
 * GANTRY_STEP_PIPELINE (default auto: on this CPU, inline decode), `onRow` hears of each row as it is measured.
 */
export async function benchStep(o: {
  streamCounts: number[];
  tokens: number;
  threads: number;
  pipeline?: StepPipelineSetting;
  /** Sequences of the server (default: the largest stream count). */
  parallel?: number;
  onRow?: (row: StepRow) => void;
}): Promise<StepRow[]> {
  const modelPath = await benchModelPath("step");
  const rows: StepRow[] = [];
  for (const n of o.streamCounts) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-step-"));
    const probeFile = path.join(dir, "probe.json");
    const srv = await startTestServer({
      env: {
        GANTRY_NUM_PARALLEL: String(o.parallel ?? Math.max(...o.streamCounts)),
        GANTRY_THREADS: String(o.threads),
        GANTRY_CONTEXT_LENGTH: "1024",
        GANTRY_KEEP_ALIVE: "-1",
        GANTRY_LOG_LEVEL: "warn",
        GANTRY_STEP_PROBE_OUT: probeFile,
        GANTRY_STEP_PIPELINE: o.pipeline ?? "auto",
        NODE_OPTIONS: `--import=${PROBE} --cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=100`,
      },
    });
    let w: ProbeWindow | undefined, tokens: number, steps: number, pipelinedSteps: number;
    try {
      await createModel(srv.url, "step", modelPath);
      await streams(srv.url, n, 8);
      await settle();
      const before = await decodeSteps(srv.url);
      await probeWindow(srv.proc.pid!, probeFile, false);
      tokens = await streams(srv.url, n, o.tokens);
      w = await probeWindow(srv.proc.pid!, probeFile, true);
      const after = await decodeSteps(srv.url);
      steps = after.all - before.all;
      pipelinedSteps = after.pipelined - before.pipelined;
    } finally {
      await srv.stop();
    }
    const file = fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
    if (!file || !w) throw new Error(`the server left no profile or probe figures in ${dir}`);
    const profile = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as CpuProfile;
    if (process.env.GANTRY_BENCH_KEEP_PROFILE) console.error(`profile: ${path.join(dir, file)}`);
    else fs.rmSync(dir, { recursive: true, force: true });
    const ms = stepParts(profile, w.fromUs, w.toUs);
    const rest = CPU_PARTS.filter((p) => p !== "sampling");
    const sampled = rest.reduce((sum, p) => sum + (ms.get(p) ?? 0), 0);
    const hostCpuUsPerStep = (w.threadCpuUs - w.decodeCpuUs) / steps;
    const sampling = w.sampleCpuUs / steps / n;
    const others = hostCpuUsPerStep / n - sampling;
    rows.push({
      streams: n,
      pipeline: o.pipeline ?? "auto",
      steps,
      pipelinedSteps,
      tokens,
      wallMs: w.wallUs / 1000,
      decodeMsPerStep: w.decodeWallUs / 1000 / steps,
      hostWallUsPerStep: (w.wallUs - w.decodeWallUs) / steps,
      gapWallUsPerStep: w.gapWallUs / Math.max(1, w.gaps),
      hostCpuUsPerStep,
      hostCpuUsPerSeqStep: hostCpuUsPerStep / n,
      parts: new Map([
        ["sampling", sampling],
        ...rest.map((p): [Part, number] => [p, ((ms.get(p) ?? 0) / (sampled || 1)) * others]),
      ]),
    });
    o.onRow?.(rows.at(-1)!);
  }
  return rows;
}

/** A row's tok/s, decode ms per step, host wall and JS CPU µs per step. */
const stepFigures = (r: StepRow): string[] => [
  ((r.tokens * 1000) / r.wallMs).toFixed(0),
  r.decodeMsPerStep.toFixed(2),
  r.hostWallUsPerStep.toFixed(0),
  r.hostCpuUsPerStep.toFixed(0),
];

/** The step pipeline's rows (`npm run bench step-pipeline`): the same figures, without and with the pipeline. */
export function stepPipelineTable(rows: StepRow[], o: { tokens: number; threads: number }, loadBefore: number): Table {
  const load = `${loadBefore.toFixed(2)} before, ${os.loadavg()[0]!.toFixed(2)} after`;
  return {
    title: `Step pipeline, CPU proxy: ${o.threads} decode thread${o.threads === 1 ? " (one core as the accelerator, the other the host)" : "s"}, BENCH_SHAPES.step, Ollama's default sampling, ${o.tokens} tokens per stream over HTTP. off = today's inline decode (the JS thread waits for the decode, the decode for the JS work); on = GANTRY_STEP_PIPELINE on (worker decode, each stream's JS work for a token overlapping the next decode). Host wall: wall time per step with no decode in flight, what a GPU would wait; load average ${load}`,
    header: [
      "streams",
      "pipeline",
      "steps",
      "pipelined steps",
      "tok/s",
      "decode ms/step (in flight)",
      "host wall µs/step",
      "JS CPU µs/step",
      "between decodes µs",
      "sampling µs/step",
    ],
    rows: rows.map((r) => [
      String(r.streams),
      r.pipeline,
      String(r.steps),
      String(r.pipelinedSteps),
      ...stepFigures(r),
      r.gapWallUsPerStep.toFixed(0),
      (r.parts.get("sampling")! * r.streams).toFixed(0),
    ]),
  };
}

export function stepTable(rows: StepRow[], o: { tokens: number; threads: number }, loadBefore: number): Table {
  const load = `${loadBefore.toFixed(2)} before, ${os.loadavg()[0]!.toFixed(2)} after`;
  return {
    title: `Step host time: a decode step's time outside the decode call, at 1, 8 and 32 streams; BENCH_SHAPES.step (1 layer × 128, 128256-token vocabulary, Q8_0), Ollama's default sampling (top_k 40, top_p 0.9, temperature 0.8, repeat_penalty 1.1 over 64), ${o.tokens} tokens per stream, /api/generate streamed to ${o.threads === 1 ? "a" : "the"} bench's client, ${o.threads} threads. Host wall: what a GPU would wait per step. JS CPU: the server's JS thread's CPU time outside the decode calls (process.threadCpuUsage), per step and per sequence per step; sampling: its time inside the samplers' calls and the step's batched sampling call (wall time of those synchronous calls, whose rows the threadpool's other threads share); the other parts split the rest in proportion to V8 profiler samples (every 100 µs) outside decode, sampling and idle; load average ${load}. Aim: ≤ 1000 µs per step at 32 streams`,
    header: [
      "streams",
      "steps",
      "tok/s",
      "decode ms/step (wall)",
      "host wall µs/step",
      "JS CPU µs/step",
      "JS CPU µs/seq/step",
      ...CPU_PARTS,
    ],
    rows: rows.map((r) => [
      String(r.streams),
      String(r.steps),
      ...stepFigures(r),
      r.hostCpuUsPerSeqStep.toFixed(1),
      ...CPU_PARTS.map((p) => r.parts.get(p)!.toFixed(1)),
    ]),
  };
}
