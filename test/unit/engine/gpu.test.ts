import { test } from "node:test";
import assert from "node:assert/strict";
import { GPU_SETTINGS, llamaGpuOption, vramBytes } from "../../../server/engine/gpu.ts";

test("the bytes in GPU memory are the offloaded layers' share of the model's size", () => {
  const size = 1_000_000;
  const cases: Array<{ gpuLayers: number; totalLayers: number; want: number }> = [
    { gpuLayers: 0, totalLayers: 31, want: 0 }, // the CPU (auto on a machine without a GPU, or off)
    { gpuLayers: 31, totalLayers: 31, want: size }, // every layer, the output layer included
    { gpuLayers: 40, totalLayers: 31, want: size }, // more asked than there are: all of it
    { gpuLayers: 10, totalLayers: 40, want: 250_000 },
    { gpuLayers: 1, totalLayers: 3, want: 333_333 },
    { gpuLayers: 5, totalLayers: 0, want: 0 }, // no layer count: nothing claimed
  ];
  for (const c of cases) assert.equal(vramBytes(size, c.gpuLayers, c.totalLayers), c.want, JSON.stringify(c));
  assert.equal(vramBytes(0, 5, 10), 0);
});

test("GANTRY_GPU maps onto node-llama-cpp's gpu option: off is the CPU, the rest are passed as they are", () => {
  assert.deepEqual(
    GPU_SETTINGS.map((g) => llamaGpuOption(g)),
    ["auto", "cuda", "vulkan", "metal", false],
  );
});
