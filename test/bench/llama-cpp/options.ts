// What `npm run bench llama` runs, from its environment: on the CPU (default) or a CUDA GPU (GANTRY_BENCH_GPU=cuda:
// Gantry with GANTRY_GPU=cuda on the patched CUDA engine, llama-server and llama-bench with every layer offloaded, both
// on the CUDA tools build for GANTRY_CUDA_ARCHITECTURES), and which concurrent streams (GANTRY_BENCH_STREAMS, e.g.
// 1,4,8,32: a long-prompt run, then each count of streams generating GANTRY_BENCH_TOKENS each; default: the CPU
// table's own scenarios), and whether llama-server also runs with backend sampling
// (GANTRY_BENCH_LLAMA_BACKEND_SAMPLING).
import { z } from "zod";
import { cudaTools, CPU_TOOLS, type LlamaToolsVariant } from "./tools.ts";
import type { Scenario } from "./interleave.ts";

const intList = z
  .string()
  .regex(/^\d+(,\d+)*$/, "a comma-separated list of whole numbers")
  .transform((s) => s.split(",").map(Number));

export const BenchLlamaEnvSchema = z.object({
  GANTRY_BENCH_GPU: z.enum(["off", "cuda"]).default("off"),
  GANTRY_CUDA_ARCHITECTURES: z.string().optional(),
  GANTRY_BENCH_STREAMS: intList.optional(),
  GANTRY_BENCH_TOKENS: z.coerce.number().int().min(1).default(256),
  /** Also llama-server with llama.cpp's backend sampling (`backend_sampling` per request; decision 0027). */
  GANTRY_BENCH_LLAMA_BACKEND_SAMPLING: z.enum(["off", "on"]).default("off"),
});
export type BenchLlamaEnv = z.infer<typeof BenchLlamaEnvSchema>;

/** How the two servers run on a GPU: the settings and arguments that put all of each on it. */
export interface GpuRun {
  /** Gantry's environment. */
  gantryEnv: Record<string, string>;
  /** llama-server's and llama-bench's extra arguments. */
  llamaArgs: string[];
  tools: LlamaToolsVariant;
}

export function gpuRun(env: BenchLlamaEnv): GpuRun | undefined {
  if (env.GANTRY_BENCH_GPU === "off") return undefined;
  if (!env.GANTRY_CUDA_ARCHITECTURES)
    throw new Error(
      "GANTRY_BENCH_GPU=cuda needs GANTRY_CUDA_ARCHITECTURES (nvidia-smi --query-gpu=compute_cap: 9.0 → 90)",
    );
  return {
    gantryEnv: { GANTRY_GPU: "cuda" },
    llamaArgs: ["-ngl", "999"],
    tools: cudaTools(env.GANTRY_CUDA_ARCHITECTURES),
  };
}

export const toolsVariant = (gpu: GpuRun | undefined): LlamaToolsVariant => gpu?.tools ?? CPU_TOOLS;

/**
 * The long-prompt run and one run per count of streams, each stream generating `tokens` (a single stream twice in a
 * row per run: one alone is short and noisy).
 */
export function streamScenarios(streams: number[], tokens: number): Scenario[] {
  return [
    { key: "prompt", concurrency: 1, nPredict: 16, longPrompt: true },
    ...streams.map((n) => ({
      key: `c${n} n${tokens}`,
      concurrency: n,
      nPredict: tokens,
      ...(n === 1 ? { repeat: 2 } : {}),
    })),
  ];
}
