// createServerApp(deps): the `gantry serve` HTTP application (express), without listen().
import express, { type Express, type Router } from "express";
import { AppError } from "../common/errors.ts";
import type { ServerDeps } from "./deps.ts";
import { errorMiddleware, sendError } from "./errors.ts";
import { announceGenerations } from "./generation.ts";
import { cors } from "./cors.ts";
import { requestLog } from "./request-log.ts";
import { generateRoutes } from "./routes/generate.ts";
import { chatRoutes } from "./routes/chat.ts";
import { embedRoutes } from "./routes/embed.ts";
import { serverInfoRoutes } from "./routes/server-info.ts";
import { openaiRoutes } from "./openai/routes.ts";

/** Paths served, with their methods: a known path with another method is a 405, anything else a 404. */
const KNOWN_POST = [
  "/api/generate",
  "/api/chat",
  "/api/embed",
  "/api/embeddings",
  "/api/create",
  "/api/copy",
  "/api/show",
  "/api/pull",
  "/api/push",
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/embeddings",
];

export interface StoreRouters {
  /** Routers that read the raw request body themselves (blob uploads): mounted before JSON parsing. */
  raw: Router[];
  /** Routers that take JSON bodies. */
  json: Router[];
}

export function createServerApp(deps: ServerDeps, store: StoreRouters = { raw: [], json: [] }): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(deps.metrics.middleware());
  app.use(requestLog(deps.logger));
  app.use(cors(deps.config.origins));
  app.use(announceGenerations(deps.engine));
  for (const r of store.raw) app.use(r);
  // Ollama's clients do not always send a JSON content type: parse every body as JSON.
  app.use(express.json({ limit: deps.config.bodyLimit, type: () => true, strict: false }));
  app.use(serverInfoRoutes(deps));
  app.use(generateRoutes(deps));
  app.use(chatRoutes(deps));
  app.use(embedRoutes(deps));
  for (const r of store.json) app.use(r);
  app.use(openaiRoutes(deps));
  app.all(KNOWN_POST, (req, res) => {
    res.setHeader("Allow", "POST");
    sendError(
      res,
      req.path.startsWith("/v1") ? "openai" : "ollama",
      new AppError("METHOD_NOT_ALLOWED", `method ${req.method} not allowed on ${req.path}`),
    );
  });
  app.use((req, res) => {
    sendError(
      res,
      req.path.startsWith("/v1") ? "openai" : "ollama",
      new AppError("NOT_FOUND", `${req.method} ${req.path} not found`),
    );
  });
  const ollamaErrors = errorMiddleware("ollama", deps.logger);
  const openaiErrors = errorMiddleware("openai", deps.logger);
  app.use(((err, req, res, next) =>
    (req.path.startsWith("/v1") ? openaiErrors : ollamaErrors)(err, req, res, next)) as express.ErrorRequestHandler);
  return app;
}
