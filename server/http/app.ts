// createServerApp(deps): the `gantry serve` HTTP application (express), without listen(). The Ollama-native API is a
// router mounted at /api, the OpenAI-compatible one a router at /v1 and Anthropic's Messages API one at /v1/messages,
// each with its own error shape (its own 404, 405 and error middleware); / , /health and /metrics sit at the root.
import express, { type Express, type Request, type Response, type Router } from "express";
import { AppError } from "../common/errors.ts";
import type { ServerDeps } from "./deps.ts";
import { errorMiddleware, sendError, type ErrorShape } from "./errors.ts";
import { announceGenerations } from "./generation.ts";
import { cors } from "./cors.ts";
import { requestLog } from "./request-log.ts";
import { generateRoutes } from "./routes/generate.ts";
import { chatRoutes } from "./routes/chat.ts";
import { embedRoutes } from "./routes/embed.ts";
import { nativeRerankRoutes, openaiRerankRoutes, RERANK_PATHS } from "./routes/rerank.ts";
import { runtimeInfoRoutes, serverInfoRoutes } from "./routes/server-info.ts";
import { openaiRoutes } from "./openai/routes.ts";
import { responsesRoutes } from "./openai/responses-routes.ts";
import { anthropicRoutes } from "./anthropic/routes.ts";

/** POST paths of each API: the same path with another method is a 405, anything else a 404. */
const NATIVE_POST = [
  "/generate",
  "/chat",
  "/embed",
  "/embeddings",
  "/rerank",
  "/create",
  "/copy",
  "/show",
  "/pull",
  "/push",
];
const OPENAI_POST = ["/chat/completions", "/completions", "/embeddings", "/responses", ...RERANK_PATHS];
const ANTHROPIC_POST = ["/", "/count_tokens"];

export interface StoreRouters {
  /** Routers that read the raw request body themselves (blob uploads): mounted before JSON parsing. */
  raw: Router[];
  /** Routers that take JSON bodies. */
  json: Router[];
}

const fullPath = (req: Request): string => req.baseUrl + req.path;

/** The end of an API's router: 405 for a known path, 404 for the rest, then its error middleware. */
function closeApi(router: Router, shape: ErrorShape, postPaths: string[], deps: ServerDeps): void {
  router.all(postPaths, (req: Request, res: Response) => {
    res.setHeader("Allow", "POST");
    sendError(res, shape, new AppError("METHOD_NOT_ALLOWED", `method ${req.method} not allowed on ${fullPath(req)}`));
  });
  router.use((req: Request, res: Response) => {
    sendError(res, shape, new AppError("NOT_FOUND", `${req.method} ${fullPath(req)} not found`));
  });
  router.use(errorMiddleware(shape, deps.logger));
}

export function createServerApp(deps: ServerDeps, store: StoreRouters = { raw: [], json: [] }): Express {
  // Ollama's clients do not always send a JSON content type: parse every body as JSON.
  const json = express.json({ limit: deps.config.bodyLimit, type: () => true, strict: false });

  const native = express.Router();
  for (const r of store.raw) native.use(r);
  native.use(
    json,
    runtimeInfoRoutes(deps),
    generateRoutes(deps),
    chatRoutes(deps),
    embedRoutes(deps),
    nativeRerankRoutes(deps),
    ...store.json,
  );
  closeApi(native, "ollama", NATIVE_POST, deps);

  const openai = express.Router();
  openai.use(json, openaiRoutes(deps), responsesRoutes(deps), openaiRerankRoutes(deps));
  closeApi(openai, "openai", OPENAI_POST, deps);

  // Anthropic's Messages API sits under /v1 too, with Anthropic's error shape.
  const anthropic = express.Router();
  anthropic.use(json, anthropicRoutes(deps));
  closeApi(anthropic, "anthropic", ANTHROPIC_POST, deps);

  // llama-server's /rerank and /reranking at the root: the /v1 route, in OpenAI's error shape.
  const rerankAtRoot = express.Router();
  rerankAtRoot.use(RERANK_PATHS, json);
  rerankAtRoot.use(openaiRerankRoutes(deps));
  rerankAtRoot.all(RERANK_PATHS, (req: Request, res: Response) => {
    res.setHeader("Allow", "POST");
    sendError(
      res,
      "openai",
      new AppError("METHOD_NOT_ALLOWED", `method ${req.method} not allowed on ${fullPath(req)}`),
    );
  });
  rerankAtRoot.use(RERANK_PATHS, errorMiddleware("openai", deps.logger));

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(deps.metrics.middleware());
  app.use(requestLog(deps.logger));
  app.use(cors(deps.config.origins));
  app.use(announceGenerations(deps.engine));
  app.use("/api", native);
  app.use("/v1/messages", anthropic);
  app.use("/v1", openai);
  app.use(rerankAtRoot);
  app.use(serverInfoRoutes(deps));
  // Anything else answers in Ollama's shape, the server's native one.
  app.use((req, res) => sendError(res, "ollama", new AppError("NOT_FOUND", `${req.method} ${req.path} not found`)));
  app.use(errorMiddleware("ollama", deps.logger));
  return app;
}
