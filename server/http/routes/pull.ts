// POST /api/pull — pull a hub model into the store, with Ollama's NDJSON progress lines (or one {"status":"success"}
// with stream:false). Errors found while reading the repo's file list (bad name, 404, 401) answer with their own
// status, because the stream is opened only once the first download line is due; later errors end the stream with an
// {"error"} line. A client that leaves cancels the downloads no other pull is watching; partial files stay for a
// resume.
import { Router, type Response } from "express";
import { toAppError, ollamaErrorBody } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { parseBody } from "../../common/validate.ts";
import type { Progress } from "../../api/store-schemas.ts";
import type { DownloadTuning } from "../../hub/download.ts";
import { pullModel } from "../../hub/pull.ts";
import { PullRequestSchema } from "../../hub/pull-schema.ts";
import type { ModelStore } from "../../store/model-store.ts";
import { clientAbortSignal, startNdjson, type LineStream } from "../streams.ts";

export interface PullRouteDeps {
  store: ModelStore;
  logger: Logger;
  hub: { url: string; token?: string | undefined };
  /** Download tuning (stall timeout, retries, parallel parts); defaults suit the public hub. */
  tuning?: Partial<DownloadTuning>;
}

/** Holds progress lines until the first one past "pulling manifest", then streams them as NDJSON. */
function deferredStream(res: Response) {
  let out: LineStream | null = null;
  const held: Progress[] = [];
  const open = (): LineStream => {
    if (!out) {
      out = startNdjson(res);
      for (const p of held.splice(0)) out.write(p);
    }
    return out;
  };
  return {
    get started() {
      return out !== null;
    },
    write(p: Progress) {
      if (out) return out.write(p);
      held.push(p);
      if (p.status !== "pulling manifest") open();
    },
    open,
  };
}

export function pullRoutes(deps: PullRouteDeps): Router {
  const router = Router();
  router.post("/pull", async (req, res) => {
    const body = parseBody(PullRequestSchema, req.body);
    const signal = clientAbortSignal(res);
    const options = {
      store: deps.store,
      hubUrl: deps.hub.url,
      token: deps.hub.token,
      signal,
      logger: deps.logger,
      ...(deps.tuning ? { tuning: deps.tuning } : {}),
    };
    if (body.stream === false) {
      try {
        await pullModel(body.model, options);
      } catch (e) {
        if (signal.aborted) return;
        throw e;
      }
      res.json({ status: "success" });
      return;
    }
    const stream = deferredStream(res);
    try {
      await pullModel(body.model, { ...options, onProgress: (p) => stream.write(p) });
    } catch (e) {
      if (signal.aborted) return; // the client left: nobody to tell
      if (!stream.started) throw e;
      const err = toAppError(e);
      if (err.status >= 500) deps.logger.error({ err: err.cause ?? err, model: body.model }, "pull failed");
      stream.open().write(ollamaErrorBody(err));
    }
    stream.open().end();
  });
  return router;
}
