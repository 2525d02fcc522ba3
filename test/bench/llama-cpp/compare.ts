// Gantry against llama.cpp's own llama-server (and llama-bench), built from the llama.cpp release node-llama-cpp ships,
// on the same GGUF files, thread count, parallel sequences and context per sequence, interleaved over rounds.
//  - benchLlamaServer: the main table (single-stream prompt/generation speed, aggregate tokens/s at concurrency 1/4/8
//    with 64 and 256 generated tokens, time to first token under load, decode steps per token position); with
//    `ceiling`, each aggregate row also against llama-batched-bench at the same stream count (llama.cpp's own batched
//    decode, no server: the GPU check's ceiling); then where Gantry's steps spent their time in each run (its /metrics:
//    decode and idle ms per step, step-time.ts), beside the ceiling's step time.
//  - benchCauses: the prebuilt binary (ggml's threads started per decode, decode and sampling on libuv workers) against
//    the patched build, whose threadpool polls (50, default) or sleeps at once (0) between steps: the server
//    configuration each variant runs with. The A/B switches of the steps before (eager steps, threadpool off, decode on
//    workers) are gone; their measurements are in docs/decisions/0012.
import { median, medianRatio as ratio, minMedMax, pairedRatio, spread, type Table } from "../table.ts";
import { interleave, promptFor, warm, type Results, type RunResult, type Scenario } from "./interleave.ts";
import { gpuMemoryByPid } from "./gpu-memory.ts";
import { batchedBench, CEILING_PROMPT_TOKENS, type BatchedBenchRow } from "./batched-bench.ts";
import { llamaBench } from "./llama-bench.ts";
import { toolsVariant, type GpuRun } from "./options.ts";
import { stepTimeTable, type StepTimeRow } from "./step-time.ts";
import {
  startGantry,
  startLlamaServer,
  type BenchTarget,
  type LlamaServerTarget,
  type LlamaSlots,
  type ServeShape,
} from "./targets.ts";
import { llamaTools } from "./tools.ts";
import { backendSamplingTable, LLAMA_BACKEND_SAMPLING, type BackendSamplingRun } from "./backend-sampling.ts";

export interface BenchModel {
  label: string;
  path: string;
}

export interface CompareOptions {
  rounds: number;
  shape: ServeShape;
  /** How llama-server assigns slots to concurrent requests (GANTRY_BENCH_LLAMA_SLOTS; default its own LRU choice). */
  llamaSlots?: LlamaSlots;
  /** Both servers on a GPU (options.ts); default the CPU. */
  gpu?: GpuRun;
  /** The runs (default MAIN: the CPU table's). */
  scenarios?: Scenario[];
  /** Also run llama-batched-bench at the scenarios' stream counts and print Gantry ÷ that ceiling. */
  ceiling?: boolean;
  /** Also llama-server with backend sampling (the same process, `backend_sampling: true` per request). */
  llamaBackendSampling?: boolean;
}

export type { Table } from "../table.ts";

const LLAMA = "llama-server";
const GANTRY = "gantry";

const MAIN: Scenario[] = [
  { key: "prompt", concurrency: 1, nPredict: 16, longPrompt: true },
  // A single stream of 64 tokens takes about a second: three back to back per run, so a run is not one blip of the VM.
  { key: "c1 n64", concurrency: 1, nPredict: 64, repeat: 3 },
  { key: "c1 n256", concurrency: 1, nPredict: 256, repeat: 2 },
  { key: "c4 n64", concurrency: 4, nPredict: 64 },
  { key: "c4 n256", concurrency: 4, nPredict: 256 },
  { key: "c8 n64", concurrency: 8, nPredict: 64 },
  { key: "c8 n256", concurrency: 8, nPredict: 256 },
  // Streams ending at different times, as real traffic does: gaps open among the busy sequences.
  { key: "c4 mixed", concurrency: 4, nPredict: 256, lengths: [256, 32, 128, 64] },
];

/** "4 × 64 tokens", or "4 × 256/32/128/64 tokens" for a mixed scenario. */
const shapeOf = (s: Scenario): string => `${s.concurrency} × ${s.lengths ? s.lengths.join("/") : s.nPredict}`;

const runs = (res: Results, target: string, scenario: string): RunResult[] => res.get(target)?.get(scenario) ?? [];

async function engineOf(url: string): Promise<string> {
  const v = (await (await fetch(`${url}/api/version`)).json()) as {
    engine?: { build: string; threadpool: boolean; inlineSampling?: boolean; inlineDecode?: boolean };
  };
  return v.engine
    ? `${v.engine.build}${v.engine.threadpool ? ", threadpool" : ""}${v.engine.inlineSampling ? ", inline sampling" : ""}${v.engine.inlineDecode ? ", inline decode" : ""}`
    : "";
}

/** Where each server's model is: Gantry's /api/ps split, and each process's GPU memory as nvidia-smi reports it. */
async function placement(targets: BenchTarget[]): Promise<string> {
  const ps = (await (await fetch(`${targets[0]!.url}/api/ps`)).json()) as {
    models: Array<{ size: number; size_vram: number }>;
  };
  const m = ps.models[0];
  const vram = await gpuMemoryByPid();
  const mib = (t: BenchTarget) => (t.pid !== undefined && vram.has(t.pid) ? `${vram.get(t.pid)} MiB` : "-");
  return `gantry /api/ps size_vram ${m ? `${m.size_vram} of ${m.size} bytes` : "-"}; GPU memory (nvidia-smi, per process): ${targets.map((t) => `${t.label} ${mib(t)}`).join(", ")}`;
}

async function stopAll(targets: BenchTarget[]): Promise<void> {
  await Promise.all(targets.map((t) => t.stop().catch(() => undefined)));
}

/** The single-stream run whose server timings give generation speed: the longest of one stream. */
const generationScenario = (scenarios: Scenario[]): Scenario | undefined =>
  scenarios
    .filter((s) => s.concurrency === 1 && !s.longPrompt && !s.lengths)
    .sort((a, b) => b.nPredict - a.nPredict)[0];

/**
 * The ceiling cell of an aggregate row: Gantry's median ÷ llama-batched-bench's S_TG at the row's stream count, and
 * where the two measure different work, what differs.
 */
function ceilingCell(s: Scenario, gantry: number[], rows: BatchedBenchRow[]): string {
  const c = rows.find((r) => r.pl === s.concurrency);
  if (!c) return "-";
  const r = (minMedMax(gantry).med / c.speedTg).toFixed(2);
  if (s.lengths) return `${r} (streams of unequal lengths: the ceiling's are equal)`;
  if (s.nPredict !== c.tg) return `${r} (${s.nPredict} tokens; the ceiling generated ${c.tg})`;
  return r;
}

/**
 * llama-server's backend-sampling variant, once a request through it worked; else why not (an older build without
 * the field, a backend without the sampler's operations: the table is then left out, the rest runs).
 */
async function backendSamplingVariant(llama: LlamaServerTarget): Promise<BenchTarget | string> {
  const variant = llama.variant(LLAMA_BACKEND_SAMPLING, { backend_sampling: true });
  try {
    await warm([variant]);
    return variant;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

export async function benchLlamaServer(models: BenchModel[], o: CompareOptions): Promise<Table[]> {
  const tools = await llamaTools(
    o.ceiling ? ["llama-server", "llama-bench", "llama-batched-bench"] : undefined,
    toolsVariant(o.gpu),
  );
  const scenarios = o.scenarios ?? MAIN;
  const gen = generationScenario(scenarios);
  // llama-bench's generation run no longer than the scenarios' (a short CPU check need not generate 128 per round).
  const refGen = Math.min(128, Math.max(...scenarios.map((x) => x.nPredict)));
  const main: string[][] = [],
    ref: string[][] = [],
    steps: StepTimeRow[] = [];
  const backendRuns: BackendSamplingRun[] = [];
  const ceilings = new Map<string, BatchedBenchRow[]>();
  const engines: string[] = [];
  for (const m of models) {
    const targets: BenchTarget[] = [];
    try {
      targets.push(await startGantry(GANTRY, m.path, o.shape, o.gpu?.gantryEnv));
      const llama = await startLlamaServer(LLAMA, tools.server, m.path, o.shape, o.llamaSlots, o.gpu?.llamaArgs ?? []);
      targets.push(llama);
      engines.push(`${m.label}: gantry engine = ${await engineOf(targets[0]!.url)}`);
      await warm(targets);
      if (o.gpu) engines.push(`${m.label}: ${await placement(targets)}`);
      // After the placement line: the variant is llama-server's own process.
      if (o.llamaBackendSampling) {
        const variant = await backendSamplingVariant(llama);
        if (typeof variant === "string") engines.push(`${m.label}: ${LLAMA_BACKEND_SAMPLING} left out: ${variant}`);
        else targets.push(variant);
      }
      const pp: number[] = [],
        tg: number[] = [],
        sameTg: number[] = [];
      // The single-stream run's prompt length (a tag of the same shape as its own), for llama-bench's same work.
      const depth = gen
        ? (await targets[0]!.complete(promptFor(`r9-9-9-${gen.key}-9`, false), 1, 1, 0)).promptTokens
        : 0;
      const res = await interleave(targets, scenarios, o.rounds, m.label, async () => {
        const b = await llamaBench(tools.bench, m.path, {
          threads: o.shape.threads,
          prompt: 512,
          gen: refGen,
          reps: 2,
          extraArgs: o.gpu?.llamaArgs ?? [],
          same: gen && depth > 0 ? { gen: gen.nPredict, depth } : undefined,
        });
        pp.push(b.ppTps);
        tg.push(b.tgTps);
        if (b.sameTgTps !== undefined) sameTg.push(b.sameTgTps);
      });
      // Per-run values pair up by round; `perRound` gives them when the spread is over something else (every request's
      // TTFT).
      // llama.cpp's own batched decode at the same stream counts, once per model (its runs are seconds long).
      const ceiling = o.ceiling
        ? await batchedBench(tools.batchedBench, m.path, {
            threads: o.shape.threads,
            parallel: [...new Set(scenarios.filter((s) => !s.longPrompt).map((s) => s.concurrency))],
            tokens: Math.max(...scenarios.filter((s) => !s.longPrompt).map((s) => s.nPredict)),
            extraArgs: o.gpu?.llamaArgs ?? [],
          })
        : [];
      ceilings.set(m.label, ceiling);
      const row = (
        measure: string,
        g: number[],
        l: number[],
        perRound?: { g: number[]; l: number[]; lowerIsBetter: boolean },
        vsCeiling = "-",
      ) =>
        main.push([
          m.label,
          measure,
          spread(g),
          spread(l),
          ratio(g, l),
          perRound ? pairedRatio(perRound.g, perRound.l, perRound.lowerIsBetter) : pairedRatio(g, l),
          ...(o.ceiling ? [vsCeiling] : []),
        ]);
      const promptTokens = Math.round(minMedMax(runs(res, GANTRY, "prompt").map((r) => r.promptTokens)).med);
      const gPrompt = runs(res, GANTRY, "prompt").map((r) => r.promptTps),
        lPrompt = runs(res, LLAMA, "prompt").map((r) => r.promptTps);
      const gGen = gen ? runs(res, GANTRY, gen.key).map((r) => r.genTps) : [],
        lGen = gen ? runs(res, LLAMA, gen.key).map((r) => r.genTps) : [];
      row(`prompt tok/s, 1 stream, ${promptTokens}-token prompt (server timings)`, gPrompt, lPrompt);
      if (gen) row(`generation tok/s, 1 stream, ${gen.nPredict} tokens (server timings)`, gGen, lGen);
      for (const s of scenarios.filter((x) => !x.longPrompt)) {
        const g = runs(res, GANTRY, s.key).map((r) => r.aggregateTps);
        const backend = runs(res, LLAMA_BACKEND_SAMPLING, s.key).map((r) => r.aggregateTps);
        if (backend.length > 0)
          backendRuns.push({
            model: m.label,
            shape: `${shapeOf(s)} tokens`,
            streams: s.concurrency,
            gantry: g,
            llama: runs(res, LLAMA, s.key).map((r) => r.aggregateTps),
            backend,
          });
        row(
          `aggregate generated tok/s, ${shapeOf(s)} tokens${s.repeat ? ` (${s.repeat} in a row per run)` : ""}`,
          g,
          runs(res, LLAMA, s.key).map((r) => r.aggregateTps),
          undefined,
          ceilingCell(s, g, ceiling),
        );
      }
      if (o.ceiling)
        engines.push(
          `${m.label}: ceiling = llama-batched-bench S_TG (${CEILING_PROMPT_TOKENS}-token prompts decoded first, untimed): ${ceiling.map((c) => `${c.pl} × ${c.tg}: ${c.speedTg.toFixed(1)} tok/s`).join(", ")}`,
        );
      for (const s of scenarios.filter((x) => x.concurrency > 1)) {
        const g = runs(res, GANTRY, s.key),
          l = runs(res, LLAMA, s.key);
        row(
          `TTFT ms under load, ${shapeOf(s)} (all requests; lower is better)`,
          g.flatMap((r) => r.ttftMs),
          l.flatMap((r) => r.ttftMs),
          { g: g.map((r) => median(r.ttftMs)), l: l.map((r) => median(r.ttftMs)), lowerIsBetter: true },
        );
      }
      for (const s of scenarios.filter((x) => !x.longPrompt)) {
        const times = runs(res, GANTRY, s.key).flatMap((r) => (r.stepTime ? [r.stepTime] : []));
        steps.push({ model: m.label, run: `${shapeOf(s)} tokens`, streams: s.concurrency, times });
      }
      for (const s of scenarios.filter((x) => x.concurrency > 1)) {
        const g = runs(res, GANTRY, s.key).map((r) => r.stepsPerPosition),
          l = runs(res, LLAMA, s.key).map((r) => r.stepsPerPosition);
        row(`decode steps per token position, ${shapeOf(s)} (ideal 1.0)`, g, l, { g, l, lowerIsBetter: true });
      }
      const short = [...res.values()]
        .flatMap((byScenario) => [...byScenario.values()].flat())
        .reduce((n, r) => n + r.short, 0);
      if (short > 0) engines.push(`${m.label}: WARNING ${short} requests generated fewer tokens than asked`);
      ref.push([
        m.label,
        `pp512 ${spread(pp)}`,
        `${spread(gPrompt)}`,
        ratio(gPrompt, pp),
        `tg${refGen} ${spread(tg)}`,
        spread(gGen),
        ratio(gGen, tg),
        gen && sameTg.length > 0 ? `tg${gen.nPredict} @ d${depth} ${spread(sameTg)}` : "-",
        sameTg.length > 0 ? ratio(gGen, sameTg) : "-",
      ]);
    } finally {
      await stopAll(targets);
    }
  }
  const slots =
    o.llamaSlots === "pinned" ? "llama-server slots pinned (request i → slot i)" : "llama-server picks its slots (LRU)";
  const where = o.gpu ? `on the GPU (${tools.variant} build; llama-server ${o.gpu.llamaArgs.join(" ")})` : "on the CPU";
  const shape = `${where}, ${o.shape.threads} threads, ${o.shape.parallel} parallel sequences × ${o.shape.contextPerSequence} context, ${slots}`;
  return [
    {
      title: `Gantry vs llama-server ${tools.release} (${tools.commit.slice(0, 12)}, the llama.cpp node-llama-cpp ships): ${shape}; min / median / max of ${o.rounds} interleaved rounds; ratio of the medians, and the median of each round's own ratio with the rounds in which Gantry did at least as well (TTFT: as low)${o.ceiling ? "; gantry ÷ ceiling: Gantry's aggregate as its clients see it (each stream's prompt and first token included) over llama-batched-bench's generation phase alone, so it reads low by the prompt's share of a run" : ""}\n${engines.join("\n")}`,
      header: [
        "model",
        "measure",
        "gantry",
        "llama-server",
        "gantry ÷ llama-server (medians)",
        "per round: median ratio (rounds gantry ≥)",
        ...(o.ceiling ? ["gantry ÷ ceiling (llama-batched-bench S_TG)"] : []),
      ],
      rows: main,
    },
    stepTimeTable(steps, o.rounds, o.ceiling ? ceilings : undefined),
    ...(backendRuns.length > 0 ? [backendSamplingTable(backendRuns, o.rounds, ceilings)] : []),
    {
      title: `Reference: llama-bench (raw llama.cpp, no server) vs Gantry's single-stream server timings, tok/s. tg${refGen} generates from an empty context without sampling; Gantry's run${gen ? ` (${gen.nPredict} tokens after its prompt, Ollama's default sampling, streamed)` : ""} does more per token, so the last two columns give llama-bench the same length and depth (-d: the prompt's tokens)`,
      header: [
        "model",
        "llama-bench prompt",
        "gantry prompt",
        "ratio",
        "llama-bench generation",
        "gantry generation",
        "ratio",
        "llama-bench, same length and depth",
        "ratio (same work)",
      ],
      rows: ref,
    },
  ];
}

interface Variant {
  label: string;
  /** Server configuration (the engine build, the threadpool's poll level). */
  env?: Record<string, string>;
}

const VARIANTS: Variant[] = [
  { label: "prebuilt binary (before)", env: { GANTRY_ENGINE_BUILD: "prebuilt" } },
  { label: "patched build, threadpool poll 0 (sleep at once)", env: { GANTRY_THREADPOOL_POLL: "0" } },
  { label: "patched build, threadpool poll 50 (default)" },
];

const CAUSES: Scenario[] = [
  { key: "c1 n64", concurrency: 1, nPredict: 64 },
  { key: "c4 n64", concurrency: 4, nPredict: 64 },
  { key: "c8 n64", concurrency: 8, nPredict: 64 },
];

export async function benchCauses(models: BenchModel[], o: CompareOptions): Promise<Table[]> {
  const tools = await llamaTools();
  const seq: string[][] = [],
    fill: string[][] = [];
  for (const m of models) {
    const targets: BenchTarget[] = [];
    try {
      for (const v of VARIANTS) targets.push(await startGantry(v.label, m.path, o.shape, v.env));
      targets.push(await startLlamaServer(LLAMA, tools.server, m.path, o.shape, o.llamaSlots));
      await warm(targets);
      const res = await interleave(targets, CAUSES, o.rounds, `${m.label} causes`);
      const l1 = runs(res, LLAMA, "c1 n64").map((r) => r.genTps);
      for (const t of targets) {
        const g1 = runs(res, t.label, "c1 n64").map((r) => r.genTps);
        seq.push([m.label, t.label, spread(g1), ratio(g1, l1)]);
        const cells = ["c4 n64", "c8 n64"].flatMap((k) => {
          const tps = runs(res, t.label, k).map((r) => r.aggregateTps);
          return [
            spread(runs(res, t.label, k).map((r) => r.stepsPerPosition)),
            spread(tps),
            ratio(
              tps,
              runs(res, LLAMA, k).map((r) => r.aggregateTps),
            ),
          ];
        });
        fill.push([m.label, t.label, ...cells]);
      }
    } finally {
      await stopAll(targets);
    }
  }
  return [
    {
      title: `Cause 1 — per-decode thread start-up (sequential gap): single-stream generation tok/s (server timings, 64 tokens), min / median / max of ${o.rounds} interleaved rounds`,
      header: ["model", "server", "generation tok/s", "÷ llama-server"],
      rows: seq,
    },
    {
      title: `Cause 2 — batch fill: decode steps per token position (ideal 1.0) and aggregate tok/s, 4 and 8 concurrent requests × 64 tokens, ${o.rounds} interleaved rounds`,
      header: [
        "model",
        "server",
        "c4 decodes/position",
        "c4 tok/s",
        "c4 ÷ llama-server",
        "c8 decodes/position",
        "c8 tok/s",
        "c8 ÷ llama-server",
      ],
      rows: fill,
    },
  ];
}
