// POST /api/rerank (Ollama's error shape) and /v1/rerank with llama-server's aliases /v1/reranking, /rerank and
// /reranking (OpenAI's error shape): the engine scores every document, the answer lists them best first, cut to top_n.
import { Router } from "express";
import { RerankRequestSchema, type RerankRequestBody } from "../../api/schemas.ts";
import { parseBody } from "../../common/validate.ts";
import { noRankHead } from "../../engine/ranking.ts";
import type { RerankResult } from "../../engine/types.ts";
import type { ServerDeps } from "../deps.ts";
import { keepAliveFrom, samplingFrom } from "../generation.ts";
import { clientAbortSignal } from "../streams.ts";
import type { Response } from "express";

/** The paths of the OpenAI-shaped rerank route, under /v1 and at the root (llama-server's aliases). */
export const RERANK_PATHS = ["/rerank", "/reranking"];

export interface RankedDocument {
  index: number;
  relevance_score: number;
}

/** Documents' scores best first (ties in input order), the best `topN`. Pure. */
export function rankedResults(scores: readonly number[], topN: number | undefined): RankedDocument[] {
  return scores
    .map((relevance_score, index) => ({ index, relevance_score }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, topN ?? scores.length);
}

async function rerank(deps: ServerDeps, body: RerankRequestBody, res: Response): Promise<RerankResult> {
  const model = await deps.store.resolve(body.model);
  // Refused before loading: the GGUF header says whether there is a rank head.
  if (!(await deps.store.capabilities(model)).includes("rerank")) throw noRankHead(body.model);
  return deps.engine.rerank({
    model,
    query: body.query,
    documents: body.documents,
    keepAliveMs: keepAliveFrom(body.keep_alive),
    options: samplingFrom(body.options),
    signal: clientAbortSignal(res),
  });
}

/** POST /api/rerank: results with Ollama's timing fields; a returned document is its text. */
export function nativeRerankRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/rerank", async (req, res) => {
    const body = parseBody(RerankRequestSchema, req.body);
    const out = await rerank(deps, body, res);
    res.json({
      model: body.model,
      results: rankedResults(out.scores, body.top_n).map((r) =>
        body.return_documents ? { ...r, document: body.documents[r.index]! } : r,
      ),
      total_duration: out.totalDurationNs,
      load_duration: out.loadDurationNs,
      prompt_eval_count: out.promptEvalCount,
    });
  });
  return r;
}

/** POST /rerank and /reranking (under /v1 and at the root): Jina's answer as llama-server gives it; a document is
 * `{text}`. */
export function openaiRerankRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post(RERANK_PATHS, async (req, res) => {
    const body = parseBody(RerankRequestSchema, req.body);
    const out = await rerank(deps, body, res);
    res.json({
      model: body.model,
      object: "list",
      usage: { prompt_tokens: out.promptEvalCount, total_tokens: out.promptEvalCount },
      results: rankedResults(out.scores, body.top_n).map((r) =>
        body.return_documents ? { ...r, document: { text: body.documents[r.index]! } } : r,
      ),
    });
  });
  return r;
}
