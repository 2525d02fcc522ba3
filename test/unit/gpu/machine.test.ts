import assert from "node:assert/strict";
import { test } from "node:test";
import { cudaArchitectures, parseGpus } from "../../gpu/machine.ts";
import { GPU_TESTS, planFor } from "../../gpu/plan.ts";

test("nvidia-smi's GPUs and the CUDA architectures to build for: each compute capability once, 9.0 → 90", () => {
  const gpus = parseGpus(
    "NVIDIA H100 80GB HBM3, 9.0, 81559, 580.159.04\nNVIDIA H100 80GB HBM3, 9.0, 81559, 580.159.04\n",
  );
  assert.deepEqual(gpus[0], {
    name: "NVIDIA H100 80GB HBM3",
    computeCap: "9.0",
    memoryMiB: 81559,
    driver: "580.159.04",
  });
  assert.equal(cudaArchitectures(gpus), "90");
  assert.equal(cudaArchitectures(parseGpus("A, 9.0, 1, d\nB, 12.0, 1, d")), "90;120");
  assert.deepEqual(parseGpus("No devices were found\n"), []);
});

test("the check's plan: GPU-sized work on a GPU, a few minutes' worth on the CPU", () => {
  const gpu = planFor({ gpu: "cuda", quick: false, cores: 16 });
  assert.deepEqual(
    [gpu.benchModels, gpu.streams, gpu.threads, gpu.serveModel],
    [["8b", "1b", "250m"], "1,4,8,32", 8, "8b"],
  );
  const quick = planFor({ gpu: "off", quick: true, cores: 2 });
  assert.deepEqual([quick.models, quick.streams, quick.threads, quick.rounds], [["250m"], "1,4", 2, 1]);
  assert.ok(GPU_TESTS.includes("test/integration/gpu/gpu-path.test.ts"));
});
