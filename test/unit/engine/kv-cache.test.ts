import { test } from "node:test";
import assert from "node:assert/strict";
import type { GgufMetadata } from "node-llama-cpp";
import { contextLengthForMemory, kvCacheBytes, kvShape } from "../../../server/engine/kv-cache.ts";
import { kvCacheProblem, runnableKvCacheTypes } from "../../../server/common/kv-cache-settings.ts";
import { withOllamaAliases } from "../../../server/config.ts";

const GIB = 1024 ** 3;

test("the default context follows memory as Ollama's: 4k under 24 GiB, 32k up to 48 GiB, 256k above", () => {
  assert.equal(contextLengthForMemory(8 * GIB), 4096);
  assert.equal(contextLengthForMemory(22.9 * GIB), 4096);
  assert.equal(contextLengthForMemory(24 * GIB), 32_768);
  assert.equal(contextLengthForMemory(46 * GIB), 32_768);
  assert.equal(contextLengthForMemory(80 * GIB), 262_144);
});

test("the cache's bytes by type: q8_0 is 17/32 of f16, q4_0 9/32", () => {
  // SmolLM2-135M's attention: 30 layers, 3 KV heads of 64.
  const shape = kvShape({
    general: { architecture: "llama" },
    llama: { block_count: 30, embedding_length: 576, attention: { head_count: 9, head_count_kv: 3 } },
  } as unknown as GgufMetadata)!;
  assert.deepEqual(shape, { layers: 30, keyValues: 192, valueValues: 192 });
  const f16 = kvCacheBytes(shape, 4096 * 4, "f16");
  assert.equal(f16, 30 * 16_384 * 384 * 2);
  assert.equal(kvCacheBytes(shape, 4096 * 4, "q8_0"), Math.round((f16 * 17) / 32));
  assert.equal(kvCacheBytes(shape, 4096 * 4, "q4_0"), Math.round((f16 * 9) / 32));
  assert.equal(kvShape({ general: { architecture: "llama" } } as unknown as GgufMetadata), undefined);
});

test("a quantized cache without flash attention is refused with the types that can run", () => {
  assert.equal(kvCacheProblem("q8_0", "auto"), undefined);
  assert.equal(kvCacheProblem("f16", "off"), undefined);
  assert.match(kvCacheProblem("q4_0", "off")!, /KV cache type q4_0 needs flash attention.*can run: f16$/);
  assert.deepEqual(runnableKvCacheTypes("on"), ["f16", "q8_0", "q4_0"]);
});

test("Ollama's variables set the Gantry settings they mean, unless those are set", () => {
  const env = withOllamaAliases({
    OLLAMA_KV_CACHE_TYPE: "Q8_0",
    OLLAMA_FLASH_ATTENTION: "1",
    OLLAMA_CONTEXT_LENGTH: "8192",
    OLLAMA_NUM_PARALLEL: "2",
    OLLAMA_MAX_QUEUE: "7",
    GANTRY_MAX_QUEUE: "9",
  });
  assert.equal(env.GANTRY_KV_CACHE_TYPE, "q8_0");
  assert.equal(env.GANTRY_FLASH_ATTENTION, "on");
  assert.equal(env.GANTRY_CONTEXT_LENGTH, "8192");
  assert.equal(env.GANTRY_NUM_PARALLEL, "2");
  assert.equal(env.GANTRY_MAX_QUEUE, "9", "Gantry's own wins");
  assert.equal(withOllamaAliases({ OLLAMA_FLASH_ATTENTION: "false" }).GANTRY_FLASH_ATTENTION, "off");
});
