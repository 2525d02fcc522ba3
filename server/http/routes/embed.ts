// POST /api/embed and the legacy POST /api/embeddings.
import { Router } from "express";
import { EmbedRequestSchema, LegacyEmbeddingsRequestSchema } from "../../api/schemas.ts";
import { parseBody } from "../../common/validate.ts";
import type { ServerDeps } from "../deps.ts";
import { keepAliveFrom, samplingFrom } from "../generation.ts";
import { clientAbortSignal } from "../streams.ts";

/** Truncates to `dimensions` and re-normalises, as Ollama does for Matryoshka-style embeddings. */
export function truncateDims(v: number[], dims: number | undefined): number[] {
  if (!dims || dims >= v.length) return v;
  const cut = v.slice(0, dims);
  const norm = Math.hypot(...cut) || 1;
  return cut.map((x) => x / norm);
}

export function embedRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/api/embed", async (req, res) => {
    const body = parseBody(EmbedRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    const input = Array.isArray(body.input) ? body.input : [body.input];
    const out = await deps.engine.embed({
      model,
      input,
      truncate: body.truncate ?? true,
      keepAliveMs: keepAliveFrom(body.keep_alive),
      options: samplingFrom(body.options),
      signal: clientAbortSignal(res),
    });
    res.json({
      model: body.model,
      embeddings: out.embeddings.map((e) => truncateDims(e, body.dimensions)),
      total_duration: out.totalDurationNs,
      load_duration: out.loadDurationNs,
      prompt_eval_count: out.promptEvalCount,
    });
  });
  r.post("/api/embeddings", async (req, res) => {
    const body = parseBody(LegacyEmbeddingsRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    const out = await deps.engine.embed({
      model,
      input: [body.prompt],
      truncate: true,
      keepAliveMs: keepAliveFrom(body.keep_alive),
      options: samplingFrom(body.options),
      signal: clientAbortSignal(res),
    });
    res.json({ embedding: out.embeddings[0] ?? [] });
  });
  return r;
}
