// Serving benchmark: aggregate generated tokens/s through `gantry serve`'s HTTP API against the same work done
// in-process on the engine (no HTTP), side by side, interleaved over rounds (A B, B A), at concurrency 1, 4 and 8;
// TTFT p50. The ratio is the median of the per-round ratios: pairs measured seconds apart share the machine's drift.
import { openInProcess } from "./in-process.ts";
import { runHttpLoad } from "./http-load.ts";
import { inTurn, settle } from "./settle.ts";
import { median } from "./table.ts";
import { createModel, startTestServer } from "../support/server.ts";

export interface ServingRow {
  model: string;
  concurrency: number;
  inProcessTps: number;
  httpTps: number;
  /** Median over rounds of HTTP ÷ in-process measured in the same round. */
  ratio: number;
  inProcessTtftMs: number;
  httpTtftMs: number;
}

export async function benchServing(
  models: Array<{ label: string; path: string }>,
  opts: { concurrencies?: number[]; maxTokens?: number; rounds?: number } = {},
): Promise<ServingRow[]> {
  const concurrencies = opts.concurrencies ?? [1, 4, 8];
  const maxTokens = opts.maxTokens ?? 64;
  const rounds = opts.rounds ?? 3;
  const parallel = Math.max(...concurrencies);
  const rows: ServingRow[] = [];
  const srv = await startTestServer({
    env: {
      GANTRY_NUM_PARALLEL: String(parallel),
      GANTRY_CONTEXT_LENGTH: "2048",
      GANTRY_KEEP_ALIVE: "-1",
      GANTRY_LOG_LEVEL: "warn",
    },
  });
  try {
    for (const m of models) {
      await createModel(srv.url, m.label, m.path);
      // Both sides keep the model loaded across rounds and are warmed once (load, page cache, first decode).
      const inProcess = await openInProcess(m.path, { numParallel: parallel });
      try {
        await runHttpLoad(srv.url, m.label, { concurrency: 1, maxTokens: 4, prompt: "warm up" });
        await inProcess.run({ concurrency: 1, maxTokens: 4, prompt: "warm up" });
        for (const c of concurrencies) {
          const inProc: number[] = [],
            http: number[] = [],
            ttftIn: number[] = [],
            ttftHttp: number[] = [];
          const ratios: number[] = [];
          for (let r = 0; r < rounds; r++) {
            // Each run starts on quiet CPUs, and neither side always runs first (A B, then B A).
            const runIn = async () => {
              await settle();
              const a = await inProcess.run({
                concurrency: c,
                maxTokens,
                prompt: "Tell me a long story about the sea",
              });
              inProc.push(a.tokens / a.seconds);
              ttftIn.push(...a.ttftMs);
            };
            const runHttp = async () => {
              await settle();
              const b = await runHttpLoad(srv.url, m.label, {
                concurrency: c,
                maxTokens,
                prompt: "Tell me a long story about the sea",
              });
              http.push(b.tokens / b.seconds);
              ttftHttp.push(...b.ttftMs);
            };
            await inTurn(r, runIn, runHttp);
            ratios.push(http.at(-1)! / inProc.at(-1)!);
          }
          const row = {
            model: m.label,
            concurrency: c,
            inProcessTps: median(inProc),
            httpTps: median(http),
            ratio: median(ratios),
            inProcessTtftMs: median(ttftIn),
            httpTtftMs: median(ttftHttp),
          };
          rows.push(row);
          process.stderr.write(
            `serving ${m.label} c=${c}: in-process ${row.inProcessTps.toFixed(1)} tok/s, HTTP ${row.httpTps.toFixed(1)} tok/s\n`,
          );
        }
      } finally {
        await inProcess.close();
      }
    }
  } finally {
    await srv.stop();
  }
  return rows;
}
