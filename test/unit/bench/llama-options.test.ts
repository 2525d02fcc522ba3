import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv } from "../../../server/common/config.ts";
import { parseComputeApps } from "../../bench/llama-cpp/gpu-memory.ts";
import { BenchLlamaEnvSchema, gpuRun, streamScenarios, toolsVariant } from "../../bench/llama-cpp/options.ts";

test("bench llama on a GPU: CUDA for both servers, every layer offloaded, the CUDA tools of the architecture named", () => {
  assert.equal(gpuRun(parseEnv(BenchLlamaEnvSchema, {})), undefined);
  assert.equal(toolsVariant(undefined).name, "cpu");
  const gpu = gpuRun(parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_GPU: "cuda", GANTRY_CUDA_ARCHITECTURES: "90" }))!;
  assert.deepEqual(gpu.gantryEnv, { GANTRY_GPU: "cuda" });
  assert.deepEqual(gpu.llamaArgs, ["-ngl", "999"]);
  assert.equal(toolsVariant(gpu).suffix, "-cuda-90");
  assert.throws(() => gpuRun(parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_GPU: "cuda" })), /GANTRY_CUDA_ARCHITECTURES/);
  assert.throws(() => parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_GPU: "rocm" }), /GANTRY_BENCH_GPU/);
});

test("bench llama streams: a long-prompt run, then each count of streams generating the tokens asked for", () => {
  const env = parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_STREAMS: "1,4,8,32", GANTRY_BENCH_TOKENS: "128" });
  const s = streamScenarios(env.GANTRY_BENCH_STREAMS!, env.GANTRY_BENCH_TOKENS);
  assert.deepEqual(
    s.map((x) => [x.key, x.concurrency, x.nPredict, x.repeat ?? 1, x.longPrompt ?? false]),
    [
      ["prompt", 1, 16, 1, true],
      ["c1 n128", 1, 128, 2, false],
      ["c4 n128", 4, 128, 1, false],
      ["c8 n128", 8, 128, 1, false],
      ["c32 n128", 32, 128, 1, false],
    ],
  );
  assert.throws(() => parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_STREAMS: "1, 4" }), /GANTRY_BENCH_STREAMS/);
});

test("nvidia-smi's per-process GPU memory is read by pid (a process on two GPUs counts once, summed)", () => {
  const m = parseComputeApps("1234, 9120\n 77, 410\n1234, 100\nnot a line\n");
  assert.deepEqual(
    [...m],
    [
      [1234, 9220],
      [77, 410],
    ],
  );
});
