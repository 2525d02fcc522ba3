import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import {
  assertGguf,
  GgufSummaryCache,
  hasGgufMagic,
  humanParameterCount,
  quantizationName,
  readGgufSummary,
} from "../../../server/gguf/metadata.ts";
import { metaValue, readGgufInfo } from "../../support/gguf/reader.ts";
import { GGML_TYPE, kv } from "../../support/gguf/types.ts";
import { fillF32, writeGguf } from "../../support/gguf/writer.ts";
import { tinyModelPath } from "../../support/models.ts";

test("parameter counts are formatted like Ollama's", () => {
  const cases: [number, string][] = [
    [134_515_008, "134.52M"],
    [135_000_000, "135M"],
    [1_000_000_000, "1B"],
    [1_710_000_000, "1.7B"],
    [8_030_261_248, "8.0B"],
    [362_000, "362K"],
    [999, "999"],
    [2_000_000, "2M"],
  ];
  for (const [n, s] of cases) assert.equal(humanParameterCount(n), s, String(n));
});

test("file types map to quantization names", () => {
  const cases: [unknown, string][] = [
    [0, "F32"],
    [1, "F16"],
    [3, "Q4_1"],
    [7, "Q8_0"],
    [15, "Q4_K_M"],
    [18, "Q6_K"],
    [32, "BF16"],
    [undefined, "unknown"],
    [999, "type 999"],
  ];
  for (const [ft, name] of cases) assert.equal(quantizationName(ft), name, String(ft));
});

test("the tiny model's header gives architecture, sizes, quantization and template", async () => {
  const file = await tinyModelPath();
  const expected = readGgufInfo(file);
  const parameterCount = expected.tensors.reduce((a, t) => a + t.dims.reduce((x, d) => x * d, 1), 0);
  const s = await readGgufSummary(file);
  assert.equal(s.architecture, "llama");
  assert.equal(s.parameterCount, parameterCount);
  assert.equal(s.parameterSize, humanParameterCount(parameterCount));
  assert.equal(s.quantizationLevel, quantizationName(Number(metaValue(expected, "general.file_type"))));
  assert.equal(s.modelInfo["general.architecture"], "llama");
  assert.equal(s.modelInfo["general.parameter_count"], parameterCount);
  assert.equal(s.modelInfo["llama.context_length"], Number(metaValue(expected, "llama.context_length")));
  assert.equal(s.modelInfo["llama.embedding_length"], 64);
  assert.equal(s.modelInfo["tokenizer.ggml.tokens"], null, "vocabulary arrays are left out unless verbose");
  assert.equal(s.chatTemplate, metaValue(expected, "tokenizer.chat_template"));
  assert.equal(s.isEmbedding, false);

  const verbose = await readGgufSummary(file, { verbose: true });
  const tokens = metaValue(expected, "tokenizer.ggml.tokens") as unknown[];
  assert.deepEqual(verbose.modelInfo["tokenizer.ggml.tokens"], tokens);
});

test("a model with a pooling type is an embedding model", async () => {
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "gantry-gguf-")), "embed.gguf");
  await writeGguf(
    file,
    {
      "general.architecture": kv.str("bert"),
      "general.file_type": kv.u32(1),
      "bert.pooling_type": kv.u32(1),
      "bert.context_length": kv.u32(128),
    },
    [{ name: "token_embd.weight", dims: [8, 16], type: GGML_TYPE.F32, fill: fillF32(() => 0.5) }],
  );
  const s = await readGgufSummary(file);
  assert.equal(s.isEmbedding, true);
  assert.equal(s.parameterCount, 128);
  assert.equal(s.quantizationLevel, "F16");
  assert.equal(s.chatTemplate, undefined);
});

test("non-GGUF files are rejected with MODEL_INVALID_FILE", async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-gguf-"));
  const bad = path.join(dir, "fake.gguf");
  await fs.writeFile(bad, "GGU");
  assert.equal(await hasGgufMagic(bad), false);
  assert.equal(await hasGgufMagic(path.join(dir, "missing.gguf")), false);
  assert.equal(await hasGgufMagic(await tinyModelPath()), true);
  await assert.rejects(
    assertGguf(bad, "fake.gguf"),
    (e: unknown) => e instanceof AppError && e.code === "MODEL_INVALID_FILE" && /fake\.gguf/.test(e.message),
  );
  await fs.writeFile(bad, "GGUF but then garbage that is no header at all");
  await assert.rejects(readGgufSummary(bad), (e: unknown) => e instanceof AppError && e.code === "MODEL_INVALID_FILE");
});

test("the summary cache reads a digest once and forgets failures", async () => {
  const cache = new GgufSummaryCache();
  const file = await tinyModelPath();
  const [a, b] = await Promise.all([cache.get("sha256:x", file), cache.get("sha256:x", file)]);
  assert.equal(a, b);
  await assert.rejects(cache.get("sha256:y", "/nonexistent.gguf"));
  assert.equal((await cache.get("sha256:y", file)).architecture, "llama", "a failed read is retried");
});
