// POST /api/create — NDJSON progress by default; `"stream": false` answers one {"status":"success"} object.
import { Router, type Response } from "express";
import { CreateRequestSchema, type Progress } from "../../api/store-schemas.ts";
import { ollamaErrorBody, toAppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { parseBody } from "../../common/validate.ts";
import type { ModelStore } from "../../store/model-store.ts";
import { startNdjson, type LineStream } from "../streams.ts";

/** An NDJSON stream whose headers go out with the first line, so earlier errors can still choose the status. */
function lazyNdjson(res: Response) {
  let stream: LineStream | null = null;
  return {
    write: (obj: unknown) => (stream ??= startNdjson(res)).write(obj),
    get started() {
      return stream !== null;
    },
    end: () => stream?.end(),
  };
}

export function createRoutes(deps: { store: ModelStore; logger: Logger }): Router {
  const r = Router();
  r.post("/create", async (req, res) => {
    const body = parseBody(CreateRequestSchema, req.body);
    if (body.stream === false) {
      await deps.store.create(body);
      res.json({ status: "success" });
      return;
    }
    const stream = lazyNdjson(res);
    try {
      await deps.store.create(body, (p: Progress) => stream.write(p));
    } catch (e) {
      if (!stream.started) throw e;
      deps.logger.warn({ err: e, model: body.model }, "create failed while streaming");
      stream.write(ollamaErrorBody(toAppError(e)));
    }
    stream.end();
  });
  return r;
}
