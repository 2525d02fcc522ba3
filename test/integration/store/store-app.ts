// Mounts the store routers on a real express app (JSON parsing, AppError → {"error"}) listening on an ephemeral port.
import type { AddressInfo } from "node:net";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import express from "express";
import { toAppError } from "../../../server/common/errors.ts";
import { silentLogger } from "../../../server/common/logger.ts";
import { blobRoutes } from "../../../server/http/routes/blobs.ts";
import { createRoutes } from "../../../server/http/routes/create.ts";
import { modelRoutes } from "../../../server/http/routes/models.ts";
import { ModelStore } from "../../../server/store/model-store.ts";

export interface StoreApp {
  url: string;
  store: ModelStore;
  close(): Promise<void>;
}

export async function startStoreApp(): Promise<StoreApp> {
  const store = new ModelStore({ root: await fs.mkdtemp(path.join(os.tmpdir(), "gantry-store-http-")) });
  const deps = { store, logger: silentLogger };
  const app = express();
  app.use(blobRoutes(deps)); // raw bodies: before JSON parsing
  app.use(express.json({ type: () => true, strict: false }));
  app.use(createRoutes(deps), modelRoutes(deps));
  app.use(((err, _req, res, _next) => {
    const e = toAppError(err);
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(e.status).json({ error: e.message });
  }) as express.ErrorRequestHandler);
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
