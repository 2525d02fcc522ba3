// In-process throughput: drives the engine directly (no HTTP) so the HTTP-vs-in-process benchmark can compare.
// The engine stays loaded across runs, as the server keeps its model loaded, so both sides do the same work.
// Also runnable: `node test/bench/in-process.ts <model.gguf> [concurrency] [maxTokens]` prints one table row.
import { testEngineBuild } from "../support/engine-build.ts";
import { silentLogger } from "../../server/common/logger.ts";
import { createEngine, type EngineOptions } from "../../server/engine/engine.ts";
import type { ModelSpec } from "../../server/engine/types.ts";

export interface InProcessResult {
  tokens: number;
  seconds: number;
  ttftMs: number[];
  /** Decode steps made during the run (one per token position of the streams; llama-server: llama_decode calls). */
  decodes: number;
}

export interface InProcessBench {
  run(opts: { concurrency: number; maxTokens: number; prompt: string }): Promise<InProcessResult>;
  close(): Promise<void>;
}

/** Loads `modelPath` into an engine with `numParallel` sequences and keeps it loaded until close(). */
export async function openInProcess(
  modelPath: string,
  engineOptions: Partial<EngineOptions> & { numParallel: number },
): Promise<InProcessBench> {
  let decodes = 0;
  const engine = await createEngine({
    logger: silentLogger,
    threads: 0,
    maxQueue: engineOptions.numParallel,
    maxLoadedModels: 1,
    contextLength: 2048,
    defaultKeepAliveMs: null,
    engineBuild: testEngineBuild(),
    ...engineOptions,
    metrics: {
      onDecode: (_m, _b, _s, _a, continued) => {
        if (!continued) decodes++;
      },
    },
  });
  const model: ModelSpec = {
    name: "bench",
    digest: "sha256:bench",
    modelPath,
    parameters: {},
    messages: [],
    adapters: [],
    size: 0,
  };
  await engine.load(model, {});
  return {
    async run({ concurrency, maxTokens, prompt }) {
      decodes = 0;
      const started = performance.now();
      const runs = await Promise.all(
        Array.from({ length: concurrency }, async (_, i) => {
          const t0 = performance.now();
          let ttft = -1,
            tokens = 0;
          for await (const ev of engine.generate({
            model,
            input: { kind: "prompt", prompt: `${prompt} (${i})` },
            options: { num_predict: maxTokens, temperature: 0.8, seed: i },
            signal: new AbortController().signal,
          })) {
            if (ev.type === "text" && ttft < 0) ttft = performance.now() - t0;
            if (ev.type === "done") tokens = ev.stats.evalCount;
          }
          return { ttft, tokens };
        }),
      );
      return {
        tokens: runs.reduce((n, r) => n + r.tokens, 0),
        seconds: (performance.now() - started) / 1000,
        ttftMs: runs.map((r) => r.ttft),
        decodes,
      };
    },
    close: () => engine.shutdown(),
  };
}

if (import.meta.main) {
  const [modelPath, conc = "4", max = "64"] = process.argv.slice(2);
  if (!modelPath) throw new Error("usage: node test/bench/in-process.ts <model.gguf> [concurrency] [maxTokens]");
  const bench = await openInProcess(modelPath, { numParallel: Number(conc) });
  try {
    const r = await bench.run({ concurrency: Number(conc), maxTokens: Number(max), prompt: "Tell me a story" });
    console.log(
      `tokens=${r.tokens} decodes=${r.decodes} decodes/position=${(r.decodes / Number(max)).toFixed(2)} tok/s=${(r.tokens / r.seconds).toFixed(1)} ttft_ms=${r.ttftMs.map((t) => t.toFixed(0)).join(",")}`,
    );
  } finally {
    await bench.close();
  }
}
