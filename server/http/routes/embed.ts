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

/** The texts to embed: a single string that is empty means none (Ollama skips it); list items are kept as they are. */
export const embedInputs = (input: string | string[]): string[] =>
  Array.isArray(input) ? input : input === "" ? [] : [input];

export function embedRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/embed", async (req, res) => {
    const body = parseBody(EmbedRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    const input = embedInputs(body.input);
    if (input.length === 0) {
      // As Ollama: nothing to embed loads the model and answers no embeddings.
      const t0 = process.hrtime.bigint();
      const { loadDurationNs } = await deps.engine.load(model, {
        keepAliveMs: keepAliveFrom(body.keep_alive),
        options: samplingFrom(body.options),
        signal: clientAbortSignal(res),
      });
      res.json({
        model: body.model,
        embeddings: [],
        total_duration: Number(process.hrtime.bigint() - t0),
        load_duration: loadDurationNs,
        prompt_eval_count: 0,
      });
      return;
    }
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
  r.post("/embeddings", async (req, res) => {
    const body = parseBody(LegacyEmbeddingsRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    // Ollama answers an empty prompt with an empty embedding.
    if (body.prompt === "") {
      res.json({ embedding: [] });
      return;
    }
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
