import { test } from "node:test";
import assert from "node:assert/strict";
import { OLLAMA_DEFAULTS, penaltiesOff, repeatWindow, resolveSampling } from "../../../server/engine/sampling.ts";

test("Ollama defaults apply when nothing is set", () => {
  const s = resolveSampling({}, {});
  assert.equal(s.temperature, OLLAMA_DEFAULTS.temperature);
  assert.equal(s.topP, 0.9);
  assert.equal(s.topK, 40);
  assert.equal(s.minP, 0);
  assert.equal(s.repeatPenalty, 1.1);
  assert.equal(s.repeatLastN, 64);
  assert.equal(s.maxTokens, undefined);
  assert.equal(s.seed, undefined);
  assert.deepEqual(s.stop, []);
  assert.equal(s.numCtx, undefined);
  assert.equal(s.useMmap, undefined);
});

test("request options override model parameters, which override defaults", () => {
  const s = resolveSampling(
    { temperature: 0.2, top_k: 5, stop: ["a"], num_ctx: 1024 },
    { temperature: 0, stop: ["b"] },
  );
  assert.equal(s.temperature, 0);
  assert.equal(s.topK, 5);
  assert.deepEqual(s.stop, ["b"]);
  assert.equal(s.numCtx, 1024);
});

test("use_mmap: the request's over the Modelfile's", () => {
  assert.equal(resolveSampling({ use_mmap: true }, {}).useMmap, true);
  assert.equal(resolveSampling({ use_mmap: true }, { use_mmap: false }).useMmap, false);
});

test("undefined request fields do not erase model parameters", () => {
  assert.equal(resolveSampling({ top_p: 0.5 }, { top_p: undefined }).topP, 0.5);
});

test("num_predict -1 means unlimited; a negative seed means random", () => {
  assert.equal(resolveSampling({}, { num_predict: -1 }).maxTokens, undefined);
  assert.equal(resolveSampling({}, { num_predict: 7 }).maxTokens, 7);
  assert.equal(resolveSampling({}, { seed: -1 }).seed, undefined);
  assert.equal(resolveSampling({}, { seed: 3 }).seed, 3);
});

test("repeat_last_n -1 spans the context; 0 or neutral penalties switch penalties off", () => {
  assert.equal(repeatWindow(resolveSampling({}, { repeat_last_n: -1 }), 2048), 2048);
  assert.equal(repeatWindow(resolveSampling({}, {}), 2048), 64);
  assert.equal(penaltiesOff(resolveSampling({}, { repeat_last_n: 0 })), true);
  assert.equal(penaltiesOff(resolveSampling({}, { repeat_penalty: 1 })), true);
  assert.equal(penaltiesOff(resolveSampling({}, { repeat_penalty: 1, presence_penalty: 0.5 })), false);
  assert.equal(penaltiesOff(resolveSampling({}, {})), false);
});

test("empty stop strings are dropped", () => {
  assert.deepEqual(resolveSampling({}, { stop: ["", "x"] }).stop, ["x"]);
});

test("a seed is any integer, as Ollama's int64: llama.cpp samples with its low 32 bits; -1 draws one", async () => {
  const { seed32 } = await import("../../../server/engine/sampling.ts");
  assert.equal(seed32(42), 42);
  assert.equal(seed32(2 ** 32 + 7), 7);
  // Above 2^53 (JSON parsing rounds it), still an integer.
  const big = JSON.parse("8674665223082153551") as number;
  assert.equal(seed32(big), Number(BigInt(big) & 0xffffffffn));
  assert.equal(seed32(-1), undefined);
  assert.equal(seed32(-2), 0xfffffffe);
  assert.equal(seed32(undefined), undefined);
  assert.equal(resolveSampling({}, { seed: 2 ** 40 + 3 }).seed, 3);
  assert.equal(resolveSampling({}, {}).numKeep, 4, "Ollama's num_keep");
});
