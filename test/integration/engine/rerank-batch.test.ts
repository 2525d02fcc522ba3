// Batched reranking (ranker.ts on the patched addon's getSequenceEmbedding) scores every pair as node-llama-cpp's
// one-pair-per-decode LlamaRankingContext does, on the tiny reranker: pairs of different lengths sharing decodes, more
// pairs than one decode holds, and a pair longer than a batched decode (scored alone); a pair's score is independent of
// the pairs sharing its decode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { createRanker, RANK_BATCH_PAIRS, RANK_BATCH_TOKENS } from "../../../server/engine/ranker.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { rerankerModelPath } from "../../support/models.ts";

const WORDS = ["sky", "blue", "cat", "dog", "sun", "moon", "water", "red", "hello", "world", "green", "tree"];

test("batched rerank scores equal one-pair-per-decode scores", async () => {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath: await rerankerModelPath() });
  const contextSize = 2 * RANK_BATCH_TOKENS;
  const ranker = await createRanker(model, { contextSize, threads: 2 });
  const single = await model.createRankingContext({ contextSize, threads: 2 });
  try {
    const query = "hello";
    // Lengths 1 to 12 words, more documents than one decode holds, and one pair longer than a batched decode.
    const documents = Array.from({ length: RANK_BATCH_PAIRS + 6 }, (_, i) =>
      Array.from({ length: 1 + (i % 12) }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(" "),
    );
    documents.push(Array.from({ length: RANK_BATCH_TOKENS }, (_, k) => WORDS[k % WORDS.length]).join(" "));
    assert.ok(ranker.inputLength(query, documents.at(-1)!) > RANK_BATCH_TOKENS);
    assert.ok(ranker.inputLength(query, documents.at(-1)!) < contextSize);
    const expected = await single.rankAll(query, documents);
    const got = await ranker.rankAll(query, documents);
    assert.equal(got.length, documents.length);
    assert.ok(new Set(expected.map((s) => s.toFixed(4))).size > 5, "documents score differently");
    // Equal up to float rounding, which follows a decode's row count (presumably another matmul path): seen bitwise
    // equal up to ~40 tokens per decode, within 6e-4 from ~80 on this random-weight model's scores.
    got.forEach((score, i) =>
      assert.ok(Math.abs(score - expected[i]!) < 2e-3, `document ${i}: ${score} vs ${expected[i]}`),
    );
    // A pair's score does not depend on what shares its decode: the same rows, other companions, bitwise equal scores.
    const [x, c1, c2] = ["sky blue cat dog", "sun moon water red", "green tree world hello"] as const;
    assert.equal(ranker.inputLength(query, c1), ranker.inputLength(query, c2));
    const withC1 = await ranker.rankAll(query, [x, ...Array<string>(7).fill(c1)]);
    const withC2 = await ranker.rankAll(query, [x, ...Array<string>(7).fill(c2)]);
    assert.equal(withC1[0], withC2[0]);
    // Concurrent requests share the batched context one decode at a time.
    const [a, b] = await Promise.all([
      ranker.rankAll(query, documents),
      ranker.rankAll("hello", documents.slice(0, 9)),
    ]);
    assert.deepEqual(a, got);
    assert.deepEqual(b, await ranker.rankAll("hello", documents.slice(0, 9)));
  } finally {
    await single.dispose();
    await ranker.dispose();
    await model.dispose();
  }
});
