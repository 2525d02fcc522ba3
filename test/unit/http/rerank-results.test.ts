// The rerank answer's order (pure) and the capability a rank head gives.
import { test } from "node:test";
import assert from "node:assert/strict";
import { rankedResults } from "../../../server/http/routes/rerank.ts";
import { modelCapabilities } from "../../../server/store/capabilities.ts";

test("rankedResults: best first, ties in input order, cut to top_n", () => {
  const scores = [0.2, 0.9, 0.5, 0.9];
  assert.deepEqual(
    rankedResults(scores, undefined).map((r) => r.index),
    [1, 3, 2, 0],
  );
  assert.deepEqual(rankedResults(scores, 2), [
    { index: 1, relevance_score: 0.9 },
    { index: 3, relevance_score: 0.9 },
  ]);
  assert.equal(rankedResults(scores, 10).length, 4);
});

test("a rank head makes a model a reranker only", () => {
  assert.deepEqual(modelCapabilities({ isEmbedding: true, isReranker: true, hasProjector: false }), ["rerank"]);
  assert.deepEqual(modelCapabilities({ isEmbedding: true, isReranker: false, hasProjector: false }), ["embedding"]);
});
