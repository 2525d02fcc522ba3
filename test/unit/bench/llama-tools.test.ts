import assert from "node:assert/strict";
import { test } from "node:test";
import { CPU_TOOLS, cudaTools } from "../../bench/llama-cpp/tools.ts";

test("llama.cpp tools: the CUDA variant builds shared libraries with run-time backends for the architectures named", () => {
  const v = cudaTools("90");
  assert.equal(v.suffix, "-cuda-90");
  assert.deepEqual(
    [v.options.GGML_CUDA, v.options.CMAKE_CUDA_ARCHITECTURES, v.options.GGML_BACKEND_DL, v.options.BUILD_SHARED_LIBS],
    ["ON", "90", "ON", "ON"],
  );
  assert.deepEqual(v.extraTargets, ["ggml-cpu", "ggml-cuda"]);
  assert.equal(cudaTools("90;120a-real").suffix, "-cuda-90_120a-real");
  assert.throws(() => cudaTools("9.0"), /not a list of CUDA architectures/);
  assert.throws(() => cudaTools("90; rm -rf /"), /not a list of CUDA architectures/);
  assert.equal(CPU_TOOLS.suffix, "");
  assert.equal(CPU_TOOLS.options.BUILD_SHARED_LIBS, "OFF");
});
