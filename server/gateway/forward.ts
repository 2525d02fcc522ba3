// One request to an app, start to end: auth → limits → body → a pod (held while the app scales from zero) → the
// pod's answer, with its retries. forward() returns an Outcome; ANSWERS is the one table of what each outcome is
// answered with (its status and, unless the pod's answer went out, the gateway's error).
import { AppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import type { Accounting } from "./accounting.ts";
import type { AppState } from "./app-state.ts";
import { decideAccess, type KeyCheck } from "./auth.ts";
import { askForBody, KEEP_ALIVE_ROUTES, readRequestBody, withoutKeepAlive } from "./body.ts";
import type { ColdStart } from "./cold-start.ts";
import type { GatewayConfig } from "./config.ts";
import type { RequestContext } from "./context.ts";
import { gatewayError, sendGatewayError } from "./errors.ts";
import { limitRefusal, type LimitResult } from "./limiter.ts";
import type { AppStats, GatewayMetrics } from "./metrics.ts";
import type { AppInfo, AppSource, Endpoint } from "./ports.ts";
import { upstreamHeaders, type ProxyOutcome, type Upstreams } from "./proxy.ts";
import { prefixKey } from "./prefix-key.ts";
import { isQueuedRun } from "./queue/exchange.ts";
import { addStreamUsage } from "./usage.ts";

export interface ForwardDeps {
  config: GatewayConfig;
  apps: AppSource;
  metrics: GatewayMetrics;
  upstreams: Upstreams;
  coldStart: ColdStart;
  accounting: Accounting;
  logger: Logger;
  now: () => number;
  /** True once the gateway is shutting down. */
  readonly closing: boolean;
  /** The request's key, checked against the key store (cached). */
  check(req: RequestContext["req"]): KeyCheck;
  /** A request slot under a key's limits. */
  acquireLimit(key: { id: string; org: string }): LimitResult;
  /** What the gateway knows of an app while it serves it. */
  state(org: string, name: string): AppState;
}

/** How a request ended. */
export type Outcome =
  | { kind: "no-app" }
  | { kind: "closing" }
  | { kind: "denied"; status: 401 | 403; message: string }
  | { kind: "limited"; message: string; headers: Record<string, string> }
  | { kind: "too-large"; max: number }
  /** The client left before the answer was whole. */
  | { kind: "gone" }
  /** No pod to send it to: the app was deleted, cannot start, is over its hold cap, or did not start in time. */
  | { kind: "unavailable"; error: AppError }
  /** Every try found the pods refusing connections, for upstream.retrySeconds. */
  | { kind: "refused"; error: Error }
  /** The pod sent no answer head within upstream.headersTimeoutSeconds. */
  | { kind: "timeout"; error: Error }
  /** The pod's answer broke off (or the connection broke before it, twice). */
  | { kind: "broke"; error: Error }
  /** The pod's answer went out whole. */
  | { kind: "answered"; status: number };

type Answer = { status: number; error?: AppError };
const unauthorized = { "www-authenticate": 'Key realm="gantry"' };

/** Each outcome's status and the gateway's error answer (none where the pod's answer went out or nobody listens). */
export const ANSWERS: { [K in Outcome["kind"]]: (o: Extract<Outcome, { kind: K }>, ctx: RequestContext) => Answer } = {
  "no-app": (_, c) => ({ status: 404, error: gatewayError(404, `no app "${c.app}" in org "${c.org}"`) }),
  closing: () => ({
    status: 503,
    error: new AppError("SHUTTING_DOWN", "the gateway is shutting down", {
      headers: { "retry-after": "1", connection: "close" },
    }),
  }),
  denied: (o) => ({ status: o.status, error: gatewayError(o.status, o.message, o.status === 401 ? unauthorized : {}) }),
  limited: (o) => ({ status: 429, error: gatewayError(429, o.message, o.headers) }),
  "too-large": (o) => ({
    status: 413,
    error: gatewayError(413, `request body is larger than ${o.max} bytes`, { connection: "close" }),
  }),
  gone: () => ({ status: 499 }),
  unavailable: (o) => ({ status: o.error.status, error: o.error }),
  refused: (o) => ({
    status: 502,
    error: gatewayError(502, `the app's pods refused the connection (${o.error.message})`),
  }),
  timeout: (o) => ({ status: 504, error: gatewayError(504, `the app did not answer in time (${o.error.message})`) }),
  broke: (o) => ({ status: 502, error: gatewayError(502, `the app's answer broke off: ${o.error.message}`) }),
  answered: (o) => ({ status: o.status }),
};

export const answerOf = (o: Outcome, ctx: RequestContext): Answer =>
  (ANSWERS[o.kind] as (o: Outcome, ctx: RequestContext) => Answer)(o, ctx);

/**
 * The retry rule: a pod that refused the connection sent nothing, so the request is tried again (on any usable pod)
 * until upstream.retrySeconds pass; a pod that broke the connection before a byte of answer (killed, or closing a
 * kept-alive connection as the request arrived) gets it tried once more, on another pod when there is one (a request
 * that itself kills pods takes at most two). Pure.
 */
export function retryOf(o: ProxyOutcome, resets: number, inRetryTime: boolean): "refused" | "reset" | undefined {
  if (o.kind === "refused" && inRetryTime) return "refused";
  if (o.kind === "reset" && resets === 0) return "reset";
  return undefined;
}

/** A pod's last outcome as the request's. Pure. */
function fromPod(o: ProxyOutcome, cause: AppError | undefined): Outcome {
  switch (o.kind) {
    case "done":
      return { kind: "answered", status: o.status };
    case "refused":
    case "timeout":
      return { kind: o.kind, error: o.error };
    case "reset":
    case "failed":
      return { kind: "broke", error: o.error };
    case "aborted":
      return cause ? { kind: "unavailable", error: cause } : { kind: "gone" };
  }
}

/** Serves one request to an app: its outcome is answered (ANSWERS) and accounted for. */
export async function serveApp(d: ForwardDeps, ctx: RequestContext): Promise<void> {
  const r = await forward(d, ctx);
  const a = answerOf(r.outcome, ctx);
  if (a.error) sendGatewayError(ctx.res, ctx.shape, a.error, { "x-request-id": ctx.requestId }, ctx.sentType);
  if (r.admitted) d.accounting.finished(ctx, r.stats, a.status);
  else d.accounting.refused(ctx, a.status, r.stats);
}

/** `admitted`: the request passed auth and limits (it counts in the app's load and its usage is recorded). */
async function forward(
  d: ForwardDeps,
  ctx: RequestContext,
): Promise<{ outcome: Outcome; admitted: boolean; stats: AppStats }> {
  const app = d.apps.get(ctx.org, ctx.app);
  // Counted under org and app "-": a series per made-up name would grow memory and Prometheus without bound.
  if (!app) return { outcome: { kind: "no-app" }, admitted: false, stats: d.metrics.app("-", "-") };
  const refused = (outcome: Outcome) => ({ outcome, admitted: false, stats: d.metrics.app(ctx.org, ctx.app) });
  if (d.closing) return refused({ kind: "closing" });
  const decision = decideAccess(app.auth, ctx.org, d.check(ctx.req));
  if (!decision.allow) {
    d.metrics.authFailures.inc({ reason: decision.reason });
    return refused({ kind: "denied", status: decision.status, message: decision.message });
  }
  let release: (() => void) | undefined;
  if (decision.key) ctx.keyId = decision.key.id;
  // A queued request was counted against its key's limits when it was submitted.
  if (decision.key && !isQueuedRun(ctx.req)) {
    // Limits are the key's: its org's overrides apply (also when it calls a shared app of another org).
    const l = d.acquireLimit(decision.key);
    if (!l.ok) return refused({ kind: "limited", ...limitRefusal(l) });
    release = l.release;
  }
  const s = d.state(ctx.org, ctx.app);
  s.uid ??= app.uid;
  s.inFlight++;
  s.active.add(ctx);
  try {
    return { outcome: await toApp(d, ctx, s, app), admitted: true, stats: s.stats };
  } finally {
    release?.();
    s.active.delete(ctx);
    s.inFlight--;
  }
}

/** The body (bounded), then the pods. */
async function toApp(d: ForwardDeps, ctx: RequestContext, s: AppState, app: AppInfo): Promise<Outcome> {
  const { req } = ctx;
  const max = d.config.maxBodyBytes;
  if (Number(req.headers["content-length"] ?? 0) > max) return { kind: "too-large", max };
  // GET and HEAD bodies are not forwarded (node drains them); no await on their way: a small request's event-loop turn.
  let body: Buffer | null = null;
  if (req.method === "GET" || req.method === "HEAD") {
    if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) {
      askForBody(req, ctx.res);
      req.resume();
    }
  } else {
    askForBody(req, ctx.res);
    const b = await readRequestBody(req, max);
    if (b === "too-large") return { kind: "too-large", max };
    if (b === "aborted") return { kind: "gone" };
    body = b;
  }
  let payload = body;
  let dropUsageEvent = false;
  if (body && (ctx.rest === "/v1/chat/completions" || ctx.rest === "/v1/completions")) {
    const withUsage = addStreamUsage(body);
    if (withUsage) {
      payload = withUsage.body;
      dropUsageEvent = true;
    }
  } else if (body && KEEP_ALIVE_ROUTES.has(ctx.rest)) payload = withoutKeepAlive(body) ?? body;
  const ph = app.loadBalancing?.strategy === "PrefixHash" ? app.loadBalancing.prefixHash : undefined;
  const key = ph && prefixKey(ctx.rest, body, ph.prefixCharLength);
  if (key) ctx.route = { key, settings: ph };
  const o = {
    method: req.method ?? "GET",
    path: ctx.rest + ctx.query,
    headers: upstreamHeaders(req.rawHeaders, ctx.requestId, req.socket.remoteAddress),
    body: payload,
    requestId: ctx.requestId,
    dropUsageEvent,
    meter: req.method === "POST" && ctx.rest !== "/api/show",
    sink: ctx,
  };
  return toPods(d, ctx, s, app, body, o);
}

type PodRequest = Omit<Parameters<Upstreams["forward"]>[2], "committed">;

/** A pod for the request (held while there is none), its answer, and the retry rule. */
async function toPods(
  d: ForwardDeps,
  ctx: RequestContext,
  s: AppState,
  app: AppInfo,
  body: Buffer | null,
  o: PodRequest,
): Promise<Outcome> {
  const retryMs = d.config.upstream.retrySeconds * 1000;
  let since: number | undefined; // the first moment a deadline is needed (the common request needs none)
  let resets = 0;
  let avoid: string | undefined;
  let known: AppInfo | undefined = app;
  for (;;) {
    const ep: Endpoint | AppError | "closed" =
      d.coldStart.pickNow(ctx, s, known, avoid) ??
      (await d.coldStart.endpointFor(
        ctx,
        s,
        body,
        (since ??= d.now()) + (ctx.committed ? retryMs : d.config.hold.timeoutSeconds * 1000),
        avoid,
      ));
    known = undefined;
    if (ep === "closed") return { kind: "gone" };
    if (ep instanceof AppError) return { kind: "unavailable", error: ep };
    const r = await attempt(d, ctx, s, ep, o);
    ctx.tokens = "tokens" in r ? r.tokens : undefined;
    const inRetryTime = d.now() < (since ??= d.now()) + retryMs;
    const retry = ctx.cause || ctx.res.destroyed ? undefined : retryOf(r, resets, inRetryTime);
    if (!retry) {
      if (r.kind === "failed" || r.kind === "timeout" || (r.kind === "reset" && resets > 0))
        d.logger.warn(
          { requestId: ctx.requestId, org: ctx.org, app: ctx.app, pod: ep.id, err: r.error.message },
          "the pod's answer broke off",
        );
      return fromPod(r, ctx.cause);
    }
    d.metrics.upstreamRetries.inc({ org: ctx.org, app: ctx.app });
    const err = (r as { error: Error }).error.message;
    if (retry === "refused") {
      s.failing.set(ep.id, d.now() + FAILING_MS);
      s.probed.delete(ep.id);
      d.logger.debug({ requestId: ctx.requestId, pod: ep.id, err }, "pod refused; retrying");
    } else {
      resets++;
      avoid = ep.id;
      d.logger.warn(
        { requestId: ctx.requestId, org: ctx.org, app: ctx.app, pod: ep.id, err },
        "the pod broke the connection before answering; trying another pod",
      );
    }
  }
}

/** How long a pod that refused a connection is skipped. */
const FAILING_MS = 1000;

/** One try on one pod; the pod's load counts the request while it runs. */
async function attempt(
  d: ForwardDeps,
  ctx: RequestContext,
  s: AppState,
  ep: Endpoint,
  o: PodRequest,
): Promise<ProxyOutcome> {
  s.load.set(ep.id, (s.load.get(ep.id) ?? 0) + 1);
  ctx.pod = ep.pod ?? ep.id;
  const f = d.upstreams.forward(ep.origin, ctx.res, { ...o, committed: ctx.committed });
  ctx.forwarding = f;
  if (ctx.cause) f.abort(ctx.cause.message);
  try {
    return await f.done;
  } finally {
    ctx.forwarding = undefined;
    s.load.set(ep.id, (s.load.get(ep.id) ?? 1) - 1);
  }
}
