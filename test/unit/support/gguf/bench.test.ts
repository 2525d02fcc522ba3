import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BENCH_SHAPES, benchDataBytes, benchTensorPlan, benchVocab } from "../../../support/gguf/bench.ts";
import { CHATML_CONTROL_TOKENS } from "../../../support/gguf/llama.ts";
import { makeRng } from "../../../support/gguf/numeric.ts";
import { GGML_TYPE, TOKEN_TYPE } from "../../../support/gguf/types.ts";

describe("bench model shapes", () => {
  it("250m is about 250 MB of Q8_0 tensors", () => {
    const bytes = benchDataBytes("250m");
    assert.ok(bytes > 240e6 && bytes < 275e6, `${bytes}`);
  });

  it("1b has TinyLlama-1.1B's parameter count: about 1.1 GiB in Q8_0", () => {
    const plan = benchTensorPlan("1b");
    const params = plan.reduce((n, t) => n + t.dims.reduce((a, b) => a * b, 1), 0);
    assert.ok(params > 1.09e9 && params < 1.11e9, `${params} parameters`);
    const bytes = benchDataBytes("1b");
    assert.ok(bytes > 1.1 * 2 ** 30 * 0.95 && bytes < 1.1 * 2 ** 30 * 1.05, `${bytes}`);
  });

  it("8b has Llama-3.1-8B's dimensions and parameter count: about 8.5 GB in Q8_0", () => {
    const plan = benchTensorPlan("8b");
    const params = plan.reduce((n, t) => n + t.dims.reduce((a, b) => a * b, 1), 0);
    assert.ok(params > 8.02e9 && params < 8.04e9, `${params} parameters`);
    assert.deepEqual(plan.find((t) => t.name === "blk.31.attn_k.weight")?.dims, [4096, 1024]);
    assert.deepEqual(plan.find((t) => t.name === "output.weight")?.dims, [4096, 128256]);
    const bytes = benchDataBytes("8b");
    assert.ok(bytes > 8.5e9 && bytes < 8.56e9, `${bytes}`);
  });

  it("plans llama tensors with grouped-query attention and Q8_0 weights", () => {
    const s = BENCH_SHAPES["1b"];
    const plan = benchTensorPlan("1b");
    assert.equal(plan.length, 3 + 9 * s.nLayer);
    const k = plan.find((t) => t.name === "blk.0.attn_k.weight")!;
    assert.deepEqual(k.dims, [2048, (2048 / 32) * 4]);
    assert.deepEqual(plan.find((t) => t.name === "blk.21.ffn_down.weight")?.dims, [5632, 2048]);
    assert.ok(plan.filter((t) => t.name.endsWith("norm.weight")).every((t) => t.type === GGML_TYPE.F32));
    assert.ok(plan.filter((t) => !t.name.endsWith("norm.weight")).every((t) => t.type === GGML_TYPE.Q8_0));
  });

  it("builds a vocabulary of exactly n unique pieces with ChatML control tokens", () => {
    const v = benchVocab(32000, makeRng(7));
    assert.equal(v.size, 32000);
    assert.equal(new Set(v.tokens).size, 32000);
    for (const t of CHATML_CONTROL_TOKENS) assert.equal(v.types[v.id(t)], TOKEN_TYPE.CONTROL);
    assert.deepEqual(benchVocab(32000, makeRng(7)).tokens, v.tokens);
  });
});
