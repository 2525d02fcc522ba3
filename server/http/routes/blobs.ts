// HEAD/POST /api/blobs/:digest — blob existence and upload (for /api/create with `files`). Mounted before JSON body
// parsing: the upload body is streamed straight into the blob store, never buffered whole.
import { Router } from "express";
import type { Logger } from "../../common/logger.ts";
import { parseDigest } from "../../store/digest.ts";
import type { ModelStore } from "../../store/model-store.ts";

export function blobRoutes(deps: { store: ModelStore; logger: Logger }): Router {
  const r = Router();
  r.head("/blobs/:digest", async (req, res) => {
    const digest = parseDigest(req.params.digest);
    res.status((await deps.store.blobs.has(digest)) ? 200 : 404).end();
  });
  r.post("/blobs/:digest", async (req, res) => {
    const digest = parseDigest(req.params.digest);
    const stored = await deps.store.blobs.put(req, digest);
    deps.logger.debug({ digest, size: stored.size, created: stored.created }, "blob uploaded");
    res.status(201).end();
  });
  return r;
}
