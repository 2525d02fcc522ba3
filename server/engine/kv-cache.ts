// The KV cache's size and defaults: the default context length by memory (Ollama's tiers), and the bytes a context's
// cache takes by element type (its settings: common/kv-cache-settings.ts). Pure.
import type { GgufMetadata } from "node-llama-cpp";
import type { FlashAttention, KvCacheType } from "../common/kv-cache-settings.ts";

/** llama-server's defaults. */
export const DEFAULT_KV: { type: KvCacheType; flashAttention: FlashAttention } = {
  type: "f16",
  flashAttention: "auto",
};

/** Bytes per cached element: ggml's block sizes (q8_0: 34 bytes per 32 values, q4_0: 18 per 32). */
const BYTES_PER_ELEMENT: Record<KvCacheType, number> = { f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };

/** node-llama-cpp's name of the type (GgmlType). */
export const ggmlTypeName = (t: KvCacheType): "F16" | "Q8_0" | "Q4_0" => t.toUpperCase() as "F16" | "Q8_0" | "Q4_0";

const GIB = 1024 ** 3;

/**
 * Ollama's default context length by memory (server/routes.go, with its 23/47 GiB margins): 4k under 24 GiB, 32k up to
 * 48 GiB, 256k above. `memoryBytes`: the GPU's free VRAM, or the free RAM on the CPU (within the process's memory
 * limit). The model's trained length caps it when loaded.
 */
export function contextLengthForMemory(memoryBytes: number): number {
  if (memoryBytes >= 47 * GIB) return 262_144;
  if (memoryBytes >= 23 * GIB) return 32_768;
  return 4096;
}

/** The shape of a model's attention that sizes its cache (from the GGUF's metadata). */
export interface KvShape {
  layers: number;
  /** K and V values per token and layer (heads_kv × head size). */
  keyValues: number;
  valueValues: number;
}

/** The cache shape of a model's GGUF metadata, when it has the usual attention keys. */
export function kvShape(metadata: GgufMetadata): KvShape | undefined {
  const arch = metadata.general?.architecture;
  const a = arch ? ((metadata as Record<string, unknown>)[arch] as Record<string, unknown> | undefined) : undefined;
  const attention = a?.attention as Record<string, unknown> | undefined;
  const num = (v: unknown): number | undefined => (typeof v === "number" && v > 0 ? v : undefined);
  const layers = num(a?.block_count);
  const embedding = num(a?.embedding_length);
  const heads = num(attention?.head_count);
  if (!layers || !embedding || !heads) return undefined;
  const headsKv = num(attention?.head_count_kv) ?? heads;
  const keyLength = num(attention?.key_length) ?? embedding / heads;
  const valueLength = num(attention?.value_length) ?? embedding / heads;
  return { layers, keyValues: headsKv * keyLength, valueValues: headsKv * valueLength };
}

/** Bytes of a cache of `cells` tokens (context length × sequences) of this type. */
export const kvCacheBytes = (shape: KvShape, cells: number, type: KvCacheType): number =>
  Math.round(shape.layers * cells * (shape.keyValues + shape.valueValues) * BYTES_PER_ELEMENT[type]);
