// Embeddings on the tiny model: one L2-normalised vector per input, truncation rules like Ollama's /api/embed.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { isAppError } from "../../../server/common/errors.ts";
import type { Engine, ModelSpec } from "../../../server/engine/types.ts";
import { tinyModelPath } from "../../support/models.ts";
import { makeEngine, specFor } from "./helpers.ts";

let engine: Engine;
let model: ModelSpec;
before(async () => {
  engine = await makeEngine();
  model = specFor(await tinyModelPath(), "tiny");
});
after(() => engine.shutdown());

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test("one normalised vector per input, of the model's embedding width", async () => {
  const r = await engine.embed({
    model,
    input: ["hello world", "another text", "hello world"],
    truncate: true,
    options: {},
    signal: new AbortController().signal,
  });
  assert.equal(r.embeddings.length, 3);
  for (const v of r.embeddings) {
    assert.equal(v.length, 64);
    assert.ok(Math.abs(norm(v) - 1) < 1e-4, `norm ${norm(v)}`);
  }
  assert.deepEqual(r.embeddings[0], r.embeddings[2], "same text, same vector");
  assert.notDeepEqual(r.embeddings[0], r.embeddings[1]);
  // Each input is evaluated with BOS in front.
  const expected =
    (await engine.countTokens(model, "hello world")) * 2 + (await engine.countTokens(model, "another text")) + 3;
  assert.equal(r.promptEvalCount, expected);
  assert.ok(r.totalDurationNs > 0);
});

test("too long input: truncated by default, CONTEXT_OVERFLOW with truncate false", async () => {
  const long = "a ".repeat(700);
  const r = await engine.embed({
    model,
    input: [long],
    truncate: true,
    options: {},
    signal: new AbortController().signal,
  });
  assert.equal(r.embeddings[0]!.length, 64);
  assert.ok(r.promptEvalCount < 512 && r.promptEvalCount > 500, `truncated to ${r.promptEvalCount}`);
  await assert.rejects(
    engine.embed({ model, input: [long], truncate: false, options: {}, signal: new AbortController().signal }),
    (e) =>
      isAppError(e) &&
      e.code === "CONTEXT_OVERFLOW" &&
      /the input length exceeds the context length: \d+ tokens, context length is 512/.test(e.message),
  );
});
