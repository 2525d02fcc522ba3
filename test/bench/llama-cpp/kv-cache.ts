// `npm run bench llama`'s KV-cache row: Gantry with a q8_0 cache against f16 (GANTRY_KV_CACHE_TYPE) on the same model,
// 8 streams, interleaved over rounds: aggregate generated tokens/s and the cache's bytes as /api/ps reports them.
import { formatBytes } from "../../../server/cli/format.ts";
import { pairedRatio, spread } from "../table.ts";
import type { BenchModel, CompareOptions, Table } from "./compare.ts";
import { interleave, warm, type Scenario } from "./interleave.ts";
import { startGantry, type BenchTarget } from "./targets.ts";

const STREAMS: Scenario = { key: "c8 n64", concurrency: 8, nPredict: 64 };

/** The loaded model's KV cache bytes (Gantry's kv_cache in /api/ps). */
async function cacheBytes(url: string): Promise<number> {
  const ps = (await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ kv_cache?: { size: number } }> };
  return ps.models[0]?.kv_cache?.size ?? 0;
}

export async function benchKvCache(models: BenchModel[], o: CompareOptions): Promise<Table> {
  const rows: string[][] = [];
  for (const m of models) {
    const targets: BenchTarget[] = [];
    try {
      for (const type of ["f16", "q8_0"])
        targets.push(await startGantry(type, m.path, o.shape, { ...o.gpu?.gantryEnv, GANTRY_KV_CACHE_TYPE: type }));
      await warm(targets);
      const res = await interleave(targets, [STREAMS], o.rounds, `${m.label} kv`);
      const tps = (label: string) =>
        res
          .get(label)!
          .get(STREAMS.key)!
          .map((r) => r.aggregateTps);
      const [f16Bytes, q8Bytes] = await Promise.all(targets.map((t) => cacheBytes(t.url)));
      rows.push([
        m.label,
        spread(tps("f16")),
        spread(tps("q8_0")),
        pairedRatio(tps("q8_0"), tps("f16")),
        formatBytes(f16Bytes!),
        formatBytes(q8Bytes!),
      ]);
    } finally {
      for (const t of targets) await t.stop();
    }
  }
  return {
    title: `KV cache q8_0 vs f16 (GANTRY_KV_CACHE_TYPE): aggregate generated tok/s, ${STREAMS.concurrency} streams × ${STREAMS.nPredict} tokens, ${o.shape.parallel} sequences × ${o.shape.contextPerSequence} context, ${o.shape.threads} threads, ${o.rounds} interleaved rounds; the cache's bytes from /api/ps`,
    header: ["model", "f16 tok/s", "q8_0 tok/s", "q8_0 / f16", "f16 cache", "q8_0 cache"],
    rows,
  };
}
