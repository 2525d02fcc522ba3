// The generated models are real GGUF files: llama.cpp (through node-llama-cpp) loads the tiny one, tokenizes ChatML
// control tokens as single tokens and generates; node-llama-cpp's own GGUF parser reads the bench model's shape.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  getLlama,
  LlamaCompletion,
  LlamaLogLevel,
  readGgufFileInfo,
  type Llama,
  type LlamaModel,
} from "node-llama-cpp";
import { BENCH_SHAPES } from "../../support/gguf/bench.ts";
import { CHATML_CONTROL_TOKENS } from "../../support/gguf/llama.ts";
import { readGgufInfo, readTensorBytes } from "../../support/gguf/reader.ts";
import { tinyVocab } from "../../support/gguf/tiny.ts";
import { benchModelPath, tinyModelPath } from "../../support/models.ts";

let llama: Llama;
before(async () => {
  llama = await getLlama({ gpu: false, build: "never", maxThreads: 2, logLevel: LlamaLogLevel.error });
});
after(async () => {
  await llama?.dispose();
});

async function complete(model: LlamaModel, prompts: string[], maxTokens: number) {
  const context = await model.createContext({ contextSize: 256, threads: 2 });
  try {
    const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
    const results = [];
    for (const [i, prompt] of prompts.entries()) {
      let tokens = 0;
      const r = await completion.generateCompletionWithMeta(prompt, {
        maxTokens,
        temperature: 1,
        seed: i + 1,
        onToken: (t) => {
          tokens += t.length;
        },
      });
      results.push({ tokens, stopReason: r.metadata.stopReason, text: r.response });
    }
    return results;
  } finally {
    await context.dispose();
  }
}

describe("tiny model in llama.cpp", () => {
  it("loads, tokenizes ChatML control tokens as single special tokens and generates", async () => {
    const model = await llama.loadModel({ modelPath: await tinyModelPath() });
    try {
      const vocab = tinyVocab();
      for (const t of CHATML_CONTROL_TOKENS) assert.deepEqual(model.tokenize(t, true), [vocab.id(t)], t);
      assert.ok(model.tokenize("<|im_start|>", false).length > 1, "as plain text it is several tokens");
      const words = model.tokenize("hello world");
      assert.deepEqual(words, [vocab.id("\u2581hello"), vocab.id("\u2581world")]);
      assert.equal(model.detokenize(words).trim(), "hello world");
      assert.equal(model.tokens.eos, vocab.id("<|im_end|>"));

      const [r] = await complete(model, ["<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"], 12);
      assert.ok(r!.tokens >= 1 && r!.tokens <= 12, `${r!.tokens} tokens`);
      assert.ok(r!.stopReason === "maxTokens" || r!.stopReason === "eogToken", String(r!.stopReason));
    } finally {
      await model.dispose();
    }
  });

  it("with controlLogit -8 runs to max tokens instead of ending early", async () => {
    const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
    try {
      const prompts = ["hello", "the sky is", "<|im_start|>user\nwhat is the sun<|im_end|>\n<|im_start|>assistant\n"];
      for (const r of await complete(model, prompts, 64)) {
        assert.equal(r.stopReason, "maxTokens");
        assert.equal(r.tokens, 64);
        assert.ok(r.text.length > 0);
      }
    } finally {
      await model.dispose();
    }
  });
});

describe("bench model 250m", () => {
  it("has the planned shape as read by node-llama-cpp's GGUF parser", async () => {
    const file = await benchModelPath("250m");
    const s = BENCH_SHAPES["250m"];
    const info = await readGgufFileInfo(file, { logWarnings: false });
    assert.equal(info.metadata.general.architecture, "llama");
    const arch = info.architectureMetadata;
    assert.equal(arch.block_count, s.nLayer);
    assert.equal(arch.embedding_length, s.nEmbd);
    assert.equal(arch.feed_forward_length, s.nFf);
    assert.equal(arch.attention?.head_count, s.nHead);
    assert.equal(arch.attention?.head_count_kv, s.nHeadKv);
    assert.equal(info.metadata.tokenizer?.ggml?.tokens?.length, s.nVocab);
    assert.equal(info.tensorInfo?.length, 3 + 9 * s.nLayer);
    assert.ok(info.tensorInfo!.every((t) => (t.name.endsWith("norm.weight") ? t.ggmlType === 0 : t.ggmlType === 8)));
  });

  it("carries the bias channel that keeps end-of-generation tokens down", async () => {
    const file = await benchModelPath("250m");
    const info = readGgufInfo(file);
    const E = BENCH_SHAPES["250m"].nEmbd;
    const rowBytes = (E / 32) * 34;
    const embd = readTensorBytes(file, info, "token_embd.weight");
    for (const row of [0, 1, 5000, 31999]) assert.equal(embd.readInt8(row * rowBytes + 2), 127, `embedding row ${row}`);
    const attnOut = readTensorBytes(file, info, "blk.3.attn_output.weight");
    assert.ok(
      attnOut.subarray(0, rowBytes).every((b) => b === 0),
      "layers do not write to dim 0",
    );
    assert.ok(attnOut.subarray(rowBytes, 2 * rowBytes).some((b) => b !== 0));
    const out = readTensorBytes(file, info, "output.weight");
    const tokens = info.metadata["tokenizer.ggml.tokens"]!.value as string[];
    const eos = tokens.indexOf("<|im_end|>");
    assert.equal(out.readInt8(eos * rowBytes + 2), -127, "<|im_end|> reads dim 0 with the largest negative weight");
  });
});
