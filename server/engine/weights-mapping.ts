// Whether a model's weights are memory-mapped from the GGUF file or read into the process's own memory. Ollama's rule
// (llm/server.go): with no GPU the weights are read in ("for CPU loads we want the memory to be allocated, not FS
// cache"), unless the request or Modelfile sets use_mmap. Measured on the 2-core bench machines (250 MB model, 4 x 256
// concurrent streams through the HTTP API, 8 interleaved rounds): Gantry 133.6 tok/s mapped vs 137.9 read in;
// llama.cpp's
// own llama-bench built as position-independent code (as a Node addon's libraries are) shows the same, 184 vs 188.5
// tokens/s for 4-token batches. Reading in costs a copy of the file at load (0.1 s per 250 MB from the page cache) and
// keeps the weights in process memory instead of the page cache.

/** The runtime facts the choice depends on (node-llama-cpp's Llama: `gpu`, `supportsMmap`). */
export interface WeightsHost {
  /** The GPU backend in use, or false on CPU. */
  gpu: string | false;
  supportsMmap: boolean;
}

/** `requested`: the use_mmap option, if set. */
export function mapWeights(requested: boolean | undefined, host: WeightsHost): boolean {
  if (!host.supportsMmap) return false;
  return requested ?? host.gpu !== false;
}
