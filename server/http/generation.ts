// The generation core shared by /api/generate, /api/chat, /v1/chat/completions and /v1/completions: every route
// translates its wire request into a GenerationPlan, then streams events through its own formatter.
import { base64Images, DEFAULT_IMAGE_INPUT } from "./images.ts";
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import type { RequestHandler, Response } from "express";
import { AppError } from "../common/errors.ts";
import type { Arrival } from "../engine/arrivals.ts";
import { parseKeepAlive } from "../common/duration.ts";
import type {
  Engine,
  GenerateRequest,
  GenerationEvent,
  GenerationStats,
  ModelSpec,
  OutputFormat,
  PromptInput,
  SamplingOptions,
  ThinkSetting,
  ToolsRequest,
} from "../engine/types.ts";
import type { Options } from "../api/schemas.ts";
import type { OutputEvent } from "./answer.ts";
import type { ServerDeps } from "./deps.ts";

export interface GenerationPlan {
  model: ModelSpec;
  input: PromptInput;
  options: SamplingOptions;
  format?: OutputFormat;
  keepAliveMs?: number | null;
  /** Report output tokens' log probabilities (and `top` alternatives each). */
  logprobs?: { top: number };
  /** Put the exchange's token ids in the final stats (/api/generate's `context`). */
  returnTokens?: boolean;
  /** Tools the model may call (chat). */
  tools?: ToolsRequest;
  /** Thinking on, off or at a level; undefined: the template's default. */
  think?: ThinkSetting;
  /** A prompt longer than the context is cut (default true); false: CONTEXT_OVERFLOW. */
  truncate?: boolean;
  /** A full context shifts during generation (default true); false: the answer ends there ("length"). */
  shift?: boolean;
}

/** A request's `truncate` and `shift` (Ollama's, default true), as the plan carries them. */
export const contextFrom = (r: { truncate?: boolean | undefined; shift?: boolean | undefined }): object => ({
  ...(r.truncate !== undefined ? { truncate: r.truncate } : {}),
  ...(r.shift !== undefined ? { shift: r.shift } : {}),
});

/** What a request may need that a model may lack: Ollama's capability names. */
export type Capability = "tools" | "thinking" | "insert";

/**
 * Ollama's capability check: a request that needs what the model cannot do is a 400 "<model> does not support
 * <capability>", never silently ignored. The capabilities are the ones /api/show lists (ModelResolver.capabilities).
 */
export async function requireCapability(
  deps: Pick<ServerDeps, "store">,
  model: ModelSpec,
  capability: Capability,
  param: string,
): Promise<void> {
  if (!(await deps.store.capabilities(model)).includes(capability))
    throw new AppError("UNSUPPORTED_FIELD", `${model.name} does not support ${capability}`, { param });
}

/** Whether a `think` value asks for thinking: true or a level (false and undefined need no thinking). */
export const wantsThinking = (think: ThinkSetting | undefined): boolean => think !== undefined && think !== false;

/** Request keep_alive → ms | null (forever) | undefined (server default). Bad values are a 400 naming the field. */
export function keepAliveFrom(value: string | number | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  try {
    return parseKeepAlive(value);
  } catch (e) {
    throw new AppError("BAD_REQUEST", `invalid keep_alive: ${(e as Error).message}`, { param: "keep_alive" });
  }
}

/** Ollama `options` → engine SamplingOptions (stop as a list; unknown and inert options dropped). */
export function samplingFrom(o: Options | undefined): SamplingOptions {
  if (!o) return {};
  const out: SamplingOptions = {};
  const copy = [
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "num_predict",
    "num_ctx",
    "num_keep",
    "use_mmap",
    "repeat_penalty",
    "repeat_last_n",
    "presence_penalty",
    "frequency_penalty",
    "draft_ngram",
    "draft_min",
  ] as const;
  for (const k of copy) if (o[k] !== undefined) (out as Record<string, unknown>)[k] = o[k];
  if (o.stop !== undefined) out.stop = (Array.isArray(o.stop) ? o.stop : [o.stop]).filter((s) => s.length > 0);
  return out;
}

/** Ollama `format` → engine OutputFormat. */
export function formatFrom(f: "json" | "" | Record<string, unknown> | undefined): OutputFormat | undefined {
  if (f === undefined || f === "") return undefined;
  if (f === "json") return "json";
  return { schema: f };
}

/** The request's base64 images (Ollama's `images` fields), checked against the server's image settings. */
export const decodeImages = (
  deps: Pick<ServerDeps, "config">,
  images: string[] | undefined,
  field: string,
): Uint8Array[] | undefined => base64Images(images, field, deps.config.images ?? DEFAULT_IMAGE_INPUT);

/** The routes that generate (and decode in the shared batches). */
const GENERATION_PATHS = new Set([
  "/api/generate",
  "/api/chat",
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/responses",
  "/v1/messages",
  "/v1/messages/count_tokens",
]);

/**
 * Announces every generation request to the engine as soon as it is received, before its body is parsed (see
 * engine/arrivals.ts: requests received together are prefilled together). The announcement is settled by the engine,
 * or when the response closes, whichever comes first (bad requests, load-only requests, disconnects).
 */
export function announceGenerations(engine: Engine): RequestHandler {
  return (req, res, next) => {
    if (req.method === "POST" && GENERATION_PATHS.has(req.path)) {
      const arrival = engine.announce();
      res.locals.arrival = arrival;
      res.once("close", arrival.settle);
    }
    next();
  };
}

/**
 * A connection just accepted almost always carries a request a moment later: it counts as an arrival until its first
 * request is received (announced by then, see announceGenerations), it closes, or the engine's arrival wait passes
 * (GANTRY_ARRIVAL_WAIT_MS; 0: connections are not announced). So a burst of requests on new connections is prefilled
 * together too, instead of the first one parsed going alone while the others finish their TCP handshakes.
 */
export function announceConnections(engine: Pick<Engine, "announce" | "arrivalWaitMs">, server: Server): void {
  const waitMs = engine.arrivalWaitMs;
  if (waitMs <= 0) return;
  const pending = new WeakMap<Socket, () => void>();
  server.on("connection", (socket: Socket) => {
    const arrival = engine.announce();
    const timer = setTimeout(() => settle(), waitMs).unref();
    const settle = (): void => {
      clearTimeout(timer);
      pending.delete(socket);
      arrival.settle();
    };
    pending.set(socket, settle);
    socket.once("close", settle);
  });
  // Runs after the application's own request listener, which announced the request itself if it generates.
  server.on("request", (req: IncomingMessage) => pending.get(req.socket)?.());
}

const arrivalOf = (res: Response): Arrival | undefined => res.locals.arrival as Arrival | undefined;

export interface StartedGeneration {
  /** The first event, already received: errors before streaming were thrown by start. */
  first: GenerationEvent;
  rest: AsyncIterator<GenerationEvent>;
  /** Aborted when the client went away (the engine also stops generations itself when the server shuts down). */
  clientSignal: AbortSignal;
}

/**
 * Starts generating and waits for the first event, so that every error that can happen before output (model load,
 * context overflow, queue full, bad schema) surfaces as an exception the route turns into a proper status code.
 */
export async function startGeneration(
  engine: Engine,
  plan: GenerationPlan,
  res: Response,
  signal: AbortSignal,
): Promise<StartedGeneration> {
  const arrival = arrivalOf(res);
  const req: GenerateRequest = { ...plan, signal, ...(arrival ? { arrival } : {}) };
  const it = engine.generate(req)[Symbol.asyncIterator]();
  const r = await it.next();
  if (r.done) throw new AppError("INTERNAL", "generation ended without a result");
  return { first: r.value, rest: it, clientSignal: signal };
}

/**
 * Runs a started generation to its end, calling onEvent per output event. Records token metrics. Returns the final
 * stats. If the client disconnects the engine ends the stream with doneReason "abort"; a generation the server stopped
 * (a shutdown whose deadline passed) throws SHUTTING_DOWN, so the client still gets an answer: a 503, or an error line
 * when the response is streaming.
 */
export async function drain(
  deps: Pick<ServerDeps, "metrics">,
  started: StartedGeneration,
  model: string,
  t0: bigint,
  onEvent: (ev: OutputEvent) => void,
): Promise<GenerationStats> {
  let ev: GenerationEvent = started.first;
  let sawOutput = false;
  try {
    for (;;) {
      if (ev.type === "done") {
        const s = ev.stats;
        deps.metrics.promptTokens.inc({ model, cached: "true" }, s.promptCachedCount);
        deps.metrics.promptTokens.inc({ model, cached: "false" }, s.promptEvalCount - s.promptCachedCount);
        deps.metrics.generatedTokens.inc({ model }, s.evalCount);
        if (s.draft) {
          deps.metrics.draftTokens.inc({ model }, s.draft.drafted);
          deps.metrics.draftAcceptedTokens.inc({ model }, s.draft.accepted);
        }
        if (s.evalCount > 0 && s.evalDurationNs > 0)
          deps.metrics.tokensPerSecond.observe({ model }, s.evalCount / (s.evalDurationNs / 1e9));
        if (s.doneReason === "abort" && !started.clientSignal.aborted)
          throw new AppError(
            "SHUTTING_DOWN",
            "the server is shutting down: the generation was stopped before it ended",
            {
              headers: { "Retry-After": "1" },
            },
          );
        return s;
      }
      if (!sawOutput && (ev.type !== "text" || ev.text.length > 0)) {
        sawOutput = true;
        deps.metrics.ttft.observe({ model }, Number(process.hrtime.bigint() - t0) / 1e9);
      }
      onEvent(ev);
      const r = await started.rest.next();
      if (r.done) throw new AppError("INTERNAL", "generation ended without final stats");
      ev = r.value;
    }
  } finally {
    // Closing the engine's generator runs its cleanup: the sequence goes back to the pool at once.
    await started.rest.return?.();
  }
}

/** Wraps a handler's generation in the in-flight gauge (what the autoscaler reads). */
export async function withInFlight<T>(deps: Pick<ServerDeps, "metrics">, fn: () => Promise<T>): Promise<T> {
  deps.metrics.inFlight.inc();
  try {
    return await fn();
  } finally {
    deps.metrics.inFlight.dec();
  }
}

export const nowIso = (): string => new Date().toISOString();

/** Of the tokens speculative decoding drafted, the share the model accepted (0 when none was drafted). */
export const draftAcceptanceRate = (d: { drafted: number; accepted: number }): number =>
  d.drafted > 0 ? d.accepted / d.drafted : 0;
