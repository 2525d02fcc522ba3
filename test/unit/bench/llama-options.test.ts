import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv } from "../../../server/common/config.ts";
import { backendSamplingTable } from "../../bench/llama-cpp/backend-sampling.ts";
import type { BatchedBenchRow } from "../../bench/llama-cpp/batched-bench.ts";
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

test("bench llama: llama-server's backend-sampling variant is off unless asked for, and only on or off", () => {
  assert.equal(parseEnv(BenchLlamaEnvSchema, {}).GANTRY_BENCH_LLAMA_BACKEND_SAMPLING, "off");
  assert.equal(
    parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_LLAMA_BACKEND_SAMPLING: "on" }).GANTRY_BENCH_LLAMA_BACKEND_SAMPLING,
    "on",
  );
  assert.throws(
    () => parseEnv(BenchLlamaEnvSchema, { GANTRY_BENCH_LLAMA_BACKEND_SAMPLING: "1" }),
    /GANTRY_BENCH_LLAMA_BACKEND_SAMPLING/,
  );
});

test("the backend-sampling table: medians over llama-server's and Gantry's, and over the ceiling at the same streams", () => {
  const row: BatchedBenchRow = { pl: 32, pp: 128, tg: 128, speedTg: 1000 };
  const ceilings = new Map([["m", [row]]]);
  const t = backendSamplingTable(
    [
      {
        model: "m",
        shape: "32 × 128 tokens",
        streams: 32,
        gantry: [600, 700, 800],
        llama: [400, 500, 450],
        backend: [800, 900, 1000],
      },
      { model: "m", shape: "8 × 128 tokens", streams: 8, gantry: [300], llama: [100], backend: [200] },
    ],
    3,
    ceilings,
  );
  assert.equal(t.header.length, 7);
  assert.deepEqual(t.rows[0]!.slice(4), ["2.00", "0.78", "0.90"]);
  assert.deepEqual(t.rows[1]!.slice(4), ["2.00", "1.50", "-"]);
  const noCeiling = backendSamplingTable(
    [{ model: "m", shape: "s", streams: 1, gantry: [1], llama: [1], backend: [1] }],
    1,
    new Map(),
  );
  assert.equal(noCeiling.header.length, 6);
  assert.equal(noCeiling.rows[0]!.length, 6);
});
