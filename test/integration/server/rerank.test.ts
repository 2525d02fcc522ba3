// Reranking over real HTTP: /v1/rerank (and llama-server's aliases) in Jina's shape with OpenAI's errors,
// /api/rerank in Ollama's, on the tiny reranker (a rank pooling head, gguf/reranker.ts); refused on the tiny llama.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rerankerModelPath, tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;
before(async () => {
  srv = await startTestServer();
  await createModel(srv.url, "ranker", await rerankerModelPath());
  await createModel(srv.url, "tiny", await tinyModelPath());
});
after(() => srv.stop());

const post = async (path: string, body: unknown) => {
  const r = await fetch(`${srv.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are read field by field
  return { status: r.status, body: (await r.json()) as Record<string, any> };
};

const DOCS = ["the sky is blue", "a cat and a dog", "hello world", "the sun and the moon", "water is red"];
const QUERY = "what color is the sky";

describe("rerank", () => {
  test("/v1/rerank: every document scored in [0, 1], best first; top_n and return_documents", async () => {
    const all = await post("/v1/rerank", { model: "ranker", query: QUERY, documents: DOCS });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.object, "list");
    assert.equal(all.body.model, "ranker");
    const results = all.body.results as Array<{ index: number; relevance_score: number; document?: unknown }>;
    assert.deepEqual(results.map((r) => r.index).sort(), [0, 1, 2, 3, 4]);
    for (let i = 1; i < results.length; i++) assert.ok(results[i - 1]!.relevance_score >= results[i]!.relevance_score);
    for (const r of results) {
      assert.ok(r.relevance_score >= 0 && r.relevance_score <= 1, String(r.relevance_score));
      assert.equal(r.document, undefined);
    }
    assert.ok(new Set(results.map((r) => r.relevance_score)).size > 1, "documents score differently");
    assert.ok(all.body.usage.prompt_tokens > 0 && all.body.usage.total_tokens === all.body.usage.prompt_tokens);
    // A document's score does not depend on the others (each pair is its own sequence, even when pairs share a decode),
    // so top_n keeps the same best ones.
    const top = await post("/v1/rerank", {
      model: "ranker",
      query: QUERY,
      documents: DOCS.map((text) => ({ text })),
      top_n: 2,
      return_documents: true,
    });
    assert.equal(top.status, 200);
    assert.deepEqual(
      top.body.results,
      results.slice(0, 2).map((r) => ({ ...r, document: { text: DOCS[r.index] } })),
    );
    const alone = await post("/v1/rerank", { model: "ranker", query: QUERY, documents: [DOCS[results[0]!.index]] });
    assert.ok(Math.abs(alone.body.results[0].relevance_score - results[0]!.relevance_score) < 1e-6);
  });

  test("the aliases /v1/reranking, /rerank and /reranking answer as /v1/rerank", async () => {
    const body = { model: "ranker", query: QUERY, documents: DOCS.slice(0, 3), top_n: 2 };
    const expected = (await post("/v1/rerank", body)).body;
    for (const path of ["/v1/reranking", "/rerank", "/reranking"]) {
      const r = await post(path, body);
      assert.equal(r.status, 200, path);
      assert.deepEqual(r.body, expected, path);
    }
  });

  test("/api/rerank: Ollama's shape, documents as text, timings", async () => {
    const v1 = (await post("/v1/rerank", { model: "ranker", query: QUERY, documents: DOCS })).body;
    const r = await post("/api/rerank", { model: "ranker", query: QUERY, documents: DOCS, return_documents: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.results,
      v1.results.map((x: { index: number }) => ({ ...x, document: DOCS[x.index] })),
    );
    assert.equal(r.body.prompt_eval_count, v1.usage.prompt_tokens);
    assert.ok(r.body.total_duration > 0);
  });

  test("/api/show lists the rerank capability", async () => {
    assert.deepEqual((await post("/api/show", { model: "ranker" })).body.capabilities, ["rerank"]);
  });

  test("bad input: no documents, a model without a rank head, a pair longer than the context; in each API's shape", async () => {
    for (const documents of [[], undefined]) {
      const v1 = await post("/v1/rerank", { model: "ranker", query: QUERY, documents });
      assert.equal(v1.status, 400);
      assert.match(v1.body.error.message, /documents (is required|must be a non-empty array)/);
      assert.equal(v1.body.error.type, "invalid_request_error");
      const api = await post("/api/rerank", { model: "ranker", query: QUERY, documents });
      assert.equal(api.status, 400);
      assert.match(api.body.error, /documents (is required|must be a non-empty array)/);
    }
    const v1 = await post("/rerank", { model: "tiny", query: QUERY, documents: DOCS });
    assert.equal(v1.status, 400);
    assert.match(v1.body.error.message, /model "tiny" has no rank pooling head/);
    const api = await post("/api/rerank", { model: "tiny", query: QUERY, documents: DOCS });
    assert.equal(api.status, 400);
    assert.match(api.body.error, /model "tiny" has no rank pooling head/);
    const long = await post("/v1/rerank", { model: "ranker", query: QUERY, documents: ["a ".repeat(700)] });
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /prompt is too long: \d+ tokens, context length is 512/);
    const many = await post("/v1/rerank", { model: "ranker", query: QUERY, documents: Array(1001).fill("a") });
    assert.equal(many.status, 400);
    assert.match(many.body.error.message, /at most 1000 documents/);
  });
});
