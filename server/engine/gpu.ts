// GPU selection and the processor split a loaded model reports (/api/ps size_vram). Pure.

/** GANTRY_GPU: auto = a GPU when node-llama-cpp finds one, else the CPU; off = the CPU only. */
export const GPU_SETTINGS = ["auto", "cuda", "vulkan", "metal", "off"] as const;
export type GpuSetting = (typeof GPU_SETTINGS)[number];

/** node-llama-cpp's getLlama `gpu` option for a setting. */
export const llamaGpuOption = (gpu: GpuSetting): "auto" | "cuda" | "vulkan" | "metal" | false =>
  gpu === "off" ? false : gpu;

/**
 * Bytes of a model's `size` held in GPU memory when `gpuLayers` of its `totalLayers` are offloaded (llama.cpp offloads
 * whole layers; the output layer counts as one). 0 on the CPU, `size` when every layer is offloaded.
 */
export function vramBytes(size: number, gpuLayers: number, totalLayers: number): number {
  if (gpuLayers <= 0 || totalLayers <= 0 || size <= 0) return 0;
  if (gpuLayers >= totalLayers) return size;
  return Math.round((size * gpuLayers) / totalLayers);
}
