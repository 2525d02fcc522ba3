// The engine builds side by side on the same model, threads and requests, interleaved over rounds: the patched addon
// compiled against the prebuilt package's llama.cpp/ggml libraries (setup's default: about a minute to build), the
// patched addon with llama.cpp and ggml compiled from source for this CPU (GANTRY_ENGINE_BUILD=source: 4-15 minutes),
// and the package's prebuilt binary. Both patched builds are made first if missing (the source one takes minutes).
// GANTRY_BENCH_BUILDS=addon,source (default addon,source,prebuilt) picks the builds to run.
import { parseEnv } from "../../server/common/config.ts";
import { SetupEnvSchema } from "../../server/setup/config.ts";
import { ensurePatchedEngine } from "../../server/setup/engine-build.ts";
import { interleave, warm, type Scenario } from "./llama-cpp/interleave.ts";
import type { BenchModel, CompareOptions, Table } from "./llama-cpp/compare.ts";
import { startGantry, type BenchTarget } from "./llama-cpp/targets.ts";
import { minMedMax, pairedRatio, spread } from "./table.ts";

const ADDON = "addon on prebuilt libs";
const SOURCE = "all from source";
const PREBUILT = "prebuilt binary";

const VARIANTS = [
  { key: "addon", label: ADDON, env: { GANTRY_ENGINE_BUILD: "auto" } },
  { key: "source", label: SOURCE, env: { GANTRY_ENGINE_BUILD: "source" } },
  { key: "prebuilt", label: PREBUILT, env: { GANTRY_ENGINE_BUILD: "prebuilt" } },
];

const SCENARIOS: Scenario[] = [
  { key: "prompt", concurrency: 1, nPredict: 16, longPrompt: true },
  { key: "c1 n64", concurrency: 1, nPredict: 64, repeat: 3 },
  { key: "c1 n256", concurrency: 1, nPredict: 256 },
  { key: "c4 n64", concurrency: 4, nPredict: 64 },
  { key: "c4 n256", concurrency: 4, nPredict: 256 },
  { key: "c8 n64", concurrency: 8, nPredict: 64 },
];

export async function benchEngineBuilds(models: BenchModel[], o: CompareOptions): Promise<Table> {
  for (const mode of ["auto", "source"] as const) {
    const r = await ensurePatchedEngine({ mode, strict: true, settings: parseEnv(SetupEnvSchema) });
    process.stderr.write(`engine build (${mode}): ${r.detail}\n`);
  }
  const wanted = (process.env.GANTRY_BENCH_BUILDS ?? "addon,source,prebuilt").split(",").map((x) => x.trim());
  const variants = VARIANTS.filter((v) => wanted.includes(v.key));
  const rows: string[][] = [];
  for (const m of models) {
    const targets: BenchTarget[] = [];
    try {
      for (const v of variants) targets.push(await startGantry(v.label, m.path, o.shape, v.env));
      await warm(targets);
      const res = await interleave(targets, SCENARIOS, o.rounds, `${m.label} builds`);
      const values = (label: string, key: string, measure: "promptTps" | "genTps" | "aggregateTps") =>
        (res.get(label)?.get(key) ?? []).map((r) => r[measure]);
      const row = (measure: string, key: string, field: "promptTps" | "genTps" | "aggregateTps") => {
        const [a, s, p] = [ADDON, SOURCE, PREBUILT].map((l) => values(l, key, field)) as [number[], number[], number[]];
        const cell = (xs: number[]) => (xs.length ? spread(xs) : "-");
        rows.push([
          m.label,
          measure,
          cell(a),
          cell(s),
          cell(p),
          (minMedMax(a).med / minMedMax(s).med).toFixed(2),
          pairedRatio(a, s),
        ]);
      };
      row("prompt tok/s, 1 stream (server timings)", "prompt", "promptTps");
      row("generation tok/s, 1 stream, 256 tokens (server timings)", "c1 n256", "genTps");
      for (const s of SCENARIOS.filter((x) => !x.longPrompt))
        row(
          `aggregate tok/s, ${s.concurrency} × ${s.nPredict} tokens${s.repeat ? ` (${s.repeat} in a row)` : ""}`,
          s.key,
          "aggregateTps",
        );
    } finally {
      await Promise.all(targets.map((t) => t.stop().catch(() => undefined)));
    }
  }
  return {
    title: `Engine builds: the patched addon on the prebuilt llama.cpp libraries (default) vs the patched build all from source (native CPU) vs the prebuilt binary; ${o.shape.threads} threads, ${o.shape.parallel} parallel × ${o.shape.contextPerSequence} context; min / median / max of ${o.rounds} interleaved rounds; addon ÷ source: ratio of the medians, and the median of each round's own ratio (rounds the addon build did at least as well)`,
    header: ["model", "measure", ADDON, SOURCE, PREBUILT, "addon ÷ source", "per round"],
    rows,
  };
}
