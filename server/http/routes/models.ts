// Stored models: GET /api/tags, POST /api/show, DELETE /api/delete, POST /api/copy; POST /api/push answers that
// pushing is not supported.
import { Router } from "express";
import {
  CopyRequestSchema,
  DeleteRequestSchema,
  ShowRequestSchema,
  type TagsResponse,
} from "../../api/store-schemas.ts";
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { parseBody } from "../../common/validate.ts";
import { PullRequestSchema } from "../../hub/pull-schema.ts";
import type { ModelStore } from "../../store/model-store.ts";
import { showResponse } from "../show-format.ts";

export function modelRoutes(deps: { store: ModelStore; logger: Logger }): Router {
  const r = Router();
  r.get("/tags", async (_req, res) => {
    const models = await deps.store.list();
    const body: TagsResponse = {
      models: models.map((m) => ({
        name: m.name,
        model: m.name,
        modified_at: m.modifiedAt.toISOString(),
        size: m.size,
        digest: m.digest.replace(/^sha256:/, ""),
        details: m.details,
      })),
    };
    res.json(body);
  });
  r.post("/show", async (req, res) => {
    const body = parseBody(ShowRequestSchema, req.body);
    res.json(showResponse(await deps.store.describe(body.model, { verbose: body.verbose ?? false })));
  });
  r.delete("/delete", async (req, res) => {
    const body = parseBody(DeleteRequestSchema, req.body);
    await deps.store.delete(body.model);
    res.status(200).end();
  });
  r.post("/copy", async (req, res) => {
    const body = parseBody(CopyRequestSchema, req.body);
    await deps.store.copy(body.source, body.destination);
    res.status(200).end();
  });
  r.post("/push", (req) => {
    const body = parseBody(PullRequestSchema, req.body); // push takes pull's body: model, insecure, stream
    throw new AppError(
      "NOT_IMPLEMENTED",
      `pushing models is not supported: Gantry does not upload "${body.model}" to a registry (models come from the ` +
        `Hugging Face hub with /api/pull, or from GGUF files with /api/create)`,
      { param: "model" },
    );
  });
  return r;
}
