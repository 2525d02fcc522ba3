// The KV cache's settings, as the server's catalogue and a ModelApp's spec.server take them: its element type
// (llama.cpp's cache types Ollama offers) and flash attention, and which pairs a backend can run. Pure.

/** Cache types, smallest last; a quantized V cache needs flash attention (llama.cpp). */
export const KV_CACHE_TYPES = ["f16", "q8_0", "q4_0"] as const;
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

export const FLASH_ATTENTION = ["auto", "on", "off"] as const;
export type FlashAttention = (typeof FLASH_ATTENTION)[number];

/** The cache types a flash-attention setting can run: with it off, only f16 (llama.cpp quantizes V with it only). */
export const runnableKvCacheTypes = (fa: FlashAttention): readonly KvCacheType[] =>
  fa === "off" ? ["f16"] : KV_CACHE_TYPES;

/** Why this pair cannot run, with the cache types that can; undefined when it can. */
export function kvCacheProblem(type: KvCacheType, fa: FlashAttention): string | undefined {
  const can = runnableKvCacheTypes(fa);
  if (can.includes(type)) return undefined;
  return `KV cache type ${type} needs flash attention, which is off; the cache types this backend can run: ${can.join(", ")}`;
}
