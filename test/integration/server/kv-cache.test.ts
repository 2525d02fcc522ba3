// The KV cache's settings on a real server with SmolLM2-135M: its type set through Ollama's variables (aliases of
// Gantry's), the memory it takes in /api/ps, and the settings a backend cannot run refused at start with the ones it
// can.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import { smollm2Path } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

interface PsModel {
  name: string;
  size: number;
  context_length: number;
  kv_cache: { type: string; flash_attention: string; size: number };
}

let f16: TestServer;
let q8: TestServer;

before(async () => {
  const env = { GANTRY_NUM_PARALLEL: "2", GANTRY_CONTEXT_LENGTH: "1024" };
  f16 = await startTestServer({ env });
  // As a server set up for Ollama: its variables, translated.
  q8 = await startTestServer({ env: { ...env, OLLAMA_KV_CACHE_TYPE: "q8_0", OLLAMA_FLASH_ATTENTION: "1" } });
  for (const srv of [f16, q8]) await createModel(srv.url, "smol", await smollm2Path());
});
after(async () => {
  await f16?.stop();
  await q8?.stop();
});

const loaded = async (srv: TestServer): Promise<PsModel> => {
  const ollama = new Ollama({ host: srv.url });
  const r = await ollama.generate({ model: "smol", prompt: "Hi", options: { num_predict: 2, temperature: 0 } });
  assert.equal(r.done, true);
  return (await ollama.ps()).models[0] as unknown as PsModel;
};

test("a q8_0 cache answers and takes 17/32 of f16's memory, shown in /api/ps (part of size)", async () => {
  const a = await loaded(f16);
  const b = await loaded(q8);
  assert.deepEqual(a.kv_cache.type, "f16");
  assert.deepEqual([b.kv_cache.type, b.kv_cache.flash_attention], ["q8_0", "on"]);
  // SmolLM2: 30 layers x 2 x 192 values per token, 2 sequences of 1024 tokens.
  assert.equal(a.kv_cache.size, 30 * 2048 * 384 * 2);
  assert.equal(b.kv_cache.size, Math.round((a.kv_cache.size * 17) / 32));
  assert.equal(a.size - b.size, a.kv_cache.size - b.kv_cache.size, "the weights are the same");
});

test("settings the backend cannot run are refused at start, with the ones it can", async () => {
  await assert.rejects(startTestServer({ env: { GANTRY_KV_CACHE_TYPE: "q5_1" } }), /"f16"\|"q8_0"\|"q4_0"/);
  await assert.rejects(
    startTestServer({ env: { OLLAMA_KV_CACHE_TYPE: "q4_0", GANTRY_FLASH_ATTENTION: "off" } }),
    /KV cache type q4_0 needs flash attention.*can run: f16/,
  );
});
