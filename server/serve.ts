// Composition root of `gantry serve`: config → logger → store → engine → HTTP app → listen; preload; graceful shutdown.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { parseKeepAlive } from "./common/duration.ts";
import type { Logger } from "./common/logger.ts";
import { parseHostPort } from "./common/host-port.ts";
import { parseByteSize, parseModelAliases, resolvePromptCacheRam, type ServerConfig } from "./config.ts";
import { createEngine } from "./engine/engine.ts";
import { engineBuildSettings } from "./engine/native/patched-build.ts";
import type { Engine } from "./engine/types.ts";
import { createServerApp } from "./http/app.ts";
import { announceConnections } from "./http/generation.ts";
import type { ReadinessState } from "./http/deps.ts";
import { ServerMetrics } from "./http/metrics.ts";
import { blobRoutes } from "./http/routes/blobs.ts";
import { createRoutes } from "./http/routes/create.ts";
import { pullRoutes } from "./http/routes/pull.ts";
import { modelRoutes } from "./http/routes/models.ts";
import { ModelStore } from "./store/model-store.ts";
import { cachedRenderer } from "./template/index.ts";
import { VERSION } from "./common/version.ts";

const splitList = (v: string): string[] =>
  v
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

/** How long shutdown waits, after the engine stopped, for responses still being written. */
const RESPONSE_GRACE_MS = 2_000;

export interface RunningServer {
  server: Server;
  url: string;
  engine: Engine;
  store: ModelStore;
  readiness: ReadinessState;
  /**
   * Loads a model of the store and keeps it loaded, as --model does (/health says 503 meanwhile); rejects when the
   * load fails.
   */
  load(ref: string): Promise<void>;
  /** Stops accepting connections, lets running requests finish (up to deadlineMs), frees models. */
  close(deadlineMs?: number): Promise<void>;
}

export async function startServer(
  config: ServerConfig,
  logger: Logger,
  opts: { preload?: string[] } = {},
): Promise<RunningServer> {
  const store = new ModelStore({
    root: config.GANTRY_MODELS,
    logger,
    only: splitList(config.GANTRY_ONLY_MODELS),
    aliases: parseModelAliases(config.GANTRY_MODEL_ALIASES),
  });
  const metrics = new ServerMetrics();
  const engine = await createEngine({
    logger,
    threads: config.GANTRY_THREADS,
    engineBuild: engineBuildSettings(config),
    gpu: config.GANTRY_GPU,
    threadpoolPoll: config.GANTRY_THREADPOOL_POLL,
    stepPipeline: config.GANTRY_STEP_PIPELINE,
    numParallel: config.GANTRY_NUM_PARALLEL,
    maxQueue: config.GANTRY_MAX_QUEUE,
    arrivalWaitMs: config.GANTRY_ARRIVAL_WAIT_MS,
    maxLoadedModels: config.GANTRY_MAX_LOADED_MODELS,
    contextLength: config.GANTRY_CONTEXT_LENGTH,
    kvCacheType: config.GANTRY_KV_CACHE_TYPE,
    flashAttention: config.GANTRY_FLASH_ATTENTION,
    defaultKeepAliveMs: parseKeepAlive(config.GANTRY_KEEP_ALIVE),
    imageLimits: { maxBytes: parseByteSize(config.GANTRY_MAX_IMAGE_SIZE)! },
    promptCacheBytes: resolvePromptCacheRam(config.GANTRY_PROMPT_CACHE_RAM, process.availableMemory()),
    metrics: metrics.engineSink(),
    renderTemplate: cachedRenderer(),
  });
  const readiness: ReadinessState = { loading: null, shuttingDown: false, failed: null };
  const app = createServerApp(
    {
      logger,
      engine,
      store,
      metrics,
      version: VERSION,
      readiness,
      config: {
        bodyLimit: config.GANTRY_BODY_LIMIT,
        origins: config.GANTRY_ORIGINS,
        images: {
          maxBytes: parseByteSize(config.GANTRY_MAX_IMAGE_SIZE)!,
          allowRemote: config.GANTRY_ALLOW_REMOTE_IMAGES === "true",
          remoteTimeoutMs: parseKeepAlive(config.GANTRY_REMOTE_IMAGE_TIMEOUT)!,
        },
      },
    },
    {
      raw: [blobRoutes({ store, logger })],
      json: [
        createRoutes({ store, logger }),
        modelRoutes({ store, logger }),
        pullRoutes({ store, logger, hub: { url: config.GANTRY_HUB_URL, token: config.HF_TOKEN } }),
      ],
    },
  );
  const { host, port } = parseHostPort(config.GANTRY_HOST);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, () => resolve(s));
    s.once("error", reject);
  });
  announceConnections(engine, server);
  // Generation streams can be long: no request timeout; idle keep-alive sockets are closed on shutdown.
  server.requestTimeout = 0;
  // Responses not yet sent: shutdown waits for them before it closes the connections.
  const open = new Set<ServerResponse>();
  server.on("request", (_req: IncomingMessage, res: ServerResponse) => {
    open.add(res);
    res.once("close", () => open.delete(res));
  });
  const addr = server.address();
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${typeof addr === "object" && addr ? addr.port : port}`;
  logger.info({ url, models: config.GANTRY_MODELS, version: VERSION }, "gantry serve listening");

  const load = async (ref: string) => {
    readiness.loading = ref;
    try {
      const model = await store.resolve(ref);
      const { loadDurationNs } = await engine.load(model, { keepAliveMs: null });
      logger.info({ model: model.name, loadSeconds: loadDurationNs / 1e9 }, "model ready");
    } finally {
      readiness.loading = null;
    }
  };
  const preload = (ref: string) =>
    load(ref).catch((e: unknown) => {
      readiness.failed = `loading model ${ref} failed: ${(e as Error).message}`;
      logger.error({ model: ref, err: e }, "preloading model failed");
    });
  const preloading = (async () => {
    for (const ref of opts.preload ?? []) await preload(ref);
  })();

  let closing: Promise<void> | undefined;
  const close = (deadlineMs = parseKeepAlive(config.GANTRY_SHUTDOWN_TIMEOUT) ?? 10_000) =>
    (closing ??= (async () => {
      readiness.shuttingDown = true;
      logger.info({ deadlineMs }, "shutting down");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await preloading.catch(() => undefined);
      await engine.shutdown({ deadlineMs });
      // Generations stopped at the deadline are being answered (a 503, or an error line): let those answers go out.
      const answered = Date.now() + RESPONSE_GRACE_MS;
      while (open.size > 0 && Date.now() < answered) await new Promise((r) => setTimeout(r, 10));
      server.closeAllConnections();
      await closed;
      logger.info("stopped");
    })());
  return { server, url, engine, store, readiness, load, close };
}
