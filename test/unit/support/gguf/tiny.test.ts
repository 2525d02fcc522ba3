import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { CHATML_CONTROL_TOKENS, CHATML_TEMPLATE } from "../../../support/gguf/llama.ts";
import { metaValue, readGgufInfo, readTensorBytes } from "../../../support/gguf/reader.ts";
import { TINY_SHAPE, tinyVocab, writeTinyModel } from "../../../support/gguf/tiny.ts";
import { GGML_TYPE, TOKEN_TYPE } from "../../../support/gguf/types.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gguf-tiny-test-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const sha256 = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

async function tiny(name: string, opts: { seed?: number; controlLogit?: number } = {}): Promise<string> {
  const file = path.join(dir, name);
  await writeTinyModel(file, opts);
  return file;
}

describe("tiny model generator", () => {
  it("is deterministic: the same seed gives the same bytes, another seed different ones", async () => {
    const a = await tiny("a.gguf", { seed: 1 });
    const b = await tiny("b.gguf", { seed: 1 });
    const c = await tiny("c.gguf", { seed: 2 });
    assert.equal(sha256(a), sha256(b));
    assert.notEqual(sha256(a), sha256(c));
  });

  it("describes a 2 x 64 llama with ChatML control tokens and template", async () => {
    const file = await tiny("meta.gguf");
    const info = readGgufInfo(file);
    assert.equal(metaValue(info, "general.architecture"), "llama");
    assert.equal(metaValue(info, "llama.block_count"), TINY_SHAPE.nLayer);
    assert.equal(metaValue(info, "llama.embedding_length"), 64);
    assert.equal(metaValue(info, "tokenizer.chat_template"), CHATML_TEMPLATE);
    const tokens = metaValue(info, "tokenizer.ggml.tokens") as string[];
    const types = metaValue(info, "tokenizer.ggml.token_type") as number[];
    assert.equal(tokens.length, metaValue(info, "llama.vocab_size"));
    assert.equal(new Set(tokens).size, tokens.length, "tokens are unique");
    for (const t of CHATML_CONTROL_TOKENS) assert.equal(types[tokens.indexOf(t)], TOKEN_TYPE.CONTROL, t);
    assert.equal(tokens.filter((t, i) => types[i] === TOKEN_TYPE.BYTE && /^<0x[0-9A-F]{2}>$/.test(t)).length, 256);
    assert.equal(tokens[metaValue(info, "tokenizer.ggml.eos_token_id") as number], "<|im_end|>");
    assert.ok(tokens.includes("\u2581hello") && tokens.includes("\u2581world"));
    assert.equal(info.tensors.length, 3 + 9 * TINY_SHAPE.nLayer);
    assert.ok(info.tensors.every((t) => t.type === GGML_TYPE.F32));
    assert.deepEqual(info.tensors.find((t) => t.name === "output.weight")?.dims, [64, tokens.length]);
  });

  it("controlLogit moves only the bias-channel weight of control tokens", async () => {
    const lowFile = await tiny("cl-8.gguf", { controlLogit: -8 });
    const defFile = await tiny("cl-default.gguf");
    const low = readGgufInfo(lowFile),
      def = readGgufInfo(defFile);
    const vocab = tinyVocab();
    const rowStart = (id: number) => id * 64 * 4;
    const lowOut = readTensorBytes(lowFile, low, "output.weight");
    const defOut = readTensorBytes(defFile, def, "output.weight");
    for (let id = 0; id < vocab.size; id++) {
      const delta = lowOut.readFloatLE(rowStart(id)) - defOut.readFloatLE(rowStart(id));
      assert.equal(delta, vocab.isControl(id) ? -5 : 0, `token ${id} ${vocab.tokens[id]}`);
      assert.ok(
        lowOut.subarray(rowStart(id) + 4, rowStart(id + 1)).equals(defOut.subarray(rowStart(id) + 4, rowStart(id + 1))),
      );
    }
    for (const t of low.tensors.filter((x) => x.name !== "output.weight")) {
      assert.ok(readTensorBytes(lowFile, low, t.name).equals(readTensorBytes(defFile, def, t.name)), t.name);
    }
  });

  it("keeps the bias channel intact: constant in embeddings, never written by the layers", async () => {
    const file = await tiny("bias.gguf");
    const info = readGgufInfo(file);
    const embd = readTensorBytes(file, info, "token_embd.weight");
    for (const id of [0, 100, tinyVocab().size - 1])
      assert.equal(embd.readFloatLE(id * 64 * 4), 1, `embedding ${id} dim 0`);
    for (const [name, inFeatures] of [
      ["blk.1.attn_output.weight", 64],
      ["blk.0.ffn_down.weight", 128],
    ] as const) {
      const w = readTensorBytes(file, info, name);
      assert.ok(
        w.subarray(0, inFeatures * 4).every((b) => b === 0),
        `${name} row 0 is zero`,
      );
      assert.ok(
        w.subarray(inFeatures * 4, 2 * inFeatures * 4).some((b) => b !== 0),
        `${name} row 1 is not`,
      );
    }
  });
});
