// One request to an app, its steps in order: 1-dispatch made its context (and chose its route from routes.ts); then
// 2-authenticate (key, auth mode, limits) → 3-route (the body read and parsed once, a pod: held while the app scales
// from zero, tried again by the retry rule) → 4-forward (each try on a pod) → 5-account (metrics, usage, access log).
// Each step returns to this function and never calls back up; where a step stops the request it says how (an
// Outcome), and outcome.ts's ANSWERS says what the client gets.
import type { Logger } from "../common/logger.ts";
import type { Authenticator } from "./2-authenticate/authenticate.ts";
import type { AppState } from "./3-route/app-state.ts";
import type { ColdStart } from "./3-route/cold-start.ts";
import { askForBody, NO_BODY, parseBody, readRequestBody } from "./3-route/request-body.ts";
import { prefixRoute, routeToPods } from "./3-route/route.ts";
import { podRequest } from "./4-forward/forward.ts";
import type { Upstreams } from "./4-forward/proxy.ts";
import type { Accounting } from "./5-account/accounting.ts";
import type { GatewayConfig } from "./config.ts";
import type { RequestBody, RequestContext } from "./context.ts";
import { sendGatewayError } from "./errors.ts";
import type { AppStats, GatewayMetrics } from "./metrics.ts";
import { answerOf, type Outcome } from "./outcome.ts";
import type { AppInfo, AppSource } from "./ports.ts";
import { MAX_BODY_DEPTH } from "./routes.ts";

export interface PipelineDeps {
  config: GatewayConfig;
  apps: AppSource;
  metrics: GatewayMetrics;
  upstreams: Upstreams;
  coldStart: ColdStart;
  accounting: Accounting;
  auth: Authenticator;
  logger: Logger;
  now: () => number;
  /** True once the gateway is shutting down. */
  readonly closing: boolean;
  /** What the gateway knows of an app while it serves it. */
  state(org: string, name: string): AppState;
}

/** Serves one request to an app: its outcome is answered (ANSWERS) and accounted for. */
export async function serveApp(d: PipelineDeps, ctx: RequestContext): Promise<void> {
  const r = await steps(d, ctx);
  const a = answerOf(r.outcome, ctx);
  if (a.error) sendGatewayError(ctx.res, ctx.shape, a.error, { "x-request-id": ctx.requestId }, ctx.sentType);
  if (r.admitted) d.accounting.finished(ctx, r.stats, a.status);
  else d.accounting.refused(ctx, a.status, r.stats);
}

/** `admitted`: the request passed step 2 (it counts in the app's load and its usage is recorded). */
async function steps(
  d: PipelineDeps,
  ctx: RequestContext,
): Promise<{ outcome: Outcome; admitted: boolean; stats: AppStats }> {
  const app = d.apps.get(ctx.org, ctx.app);
  // Counted under org and app "-": a series per made-up name would grow memory and Prometheus without bound.
  if (!app) return { outcome: { kind: "no-app" }, admitted: false, stats: d.metrics.app("-", "-") };
  const refused = (outcome: Outcome) => ({ outcome, admitted: false, stats: d.metrics.app(ctx.org, ctx.app) });
  if (d.closing) return refused({ kind: "closing" });
  const admission = d.auth.admit(ctx, app);
  if ("kind" in admission) return refused(admission);
  const s = d.state(ctx.org, ctx.app);
  s.uid ??= app.uid;
  s.inFlight++;
  s.active.add(ctx);
  try {
    return { outcome: await toApp(d, ctx, s, app), admitted: true, stats: s.stats };
  } finally {
    admission.release?.();
    s.active.delete(ctx);
    s.inFlight--;
  }
}

/** The body (bounded, parsed once), then the pods. */
async function toApp(d: PipelineDeps, ctx: RequestContext, s: AppState, app: AppInfo): Promise<Outcome> {
  const { req } = ctx;
  const max = d.config.maxBodyBytes;
  if (Number(req.headers["content-length"] ?? 0) > max) return { kind: "too-large", max };
  // GET and HEAD bodies are not forwarded (node drains them); no await on their way: a small request's event-loop turn.
  let body: RequestBody = NO_BODY;
  if (ctx.api.body === "none") {
    if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) {
      askForBody(req, ctx.res);
      req.resume();
    }
  } else {
    askForBody(req, ctx.res);
    const raw = await readRequestBody(req, max);
    if (raw === "too-large") return { kind: "too-large", max };
    if (raw === "aborted") return { kind: "gone" };
    const parsed = parseBody(raw);
    if (parsed === "too-deep") return { kind: "too-deep", max: MAX_BODY_DEPTH };
    body = parsed;
  }
  const route = prefixRoute(app, ctx, body);
  if (route) ctx.route = route;
  return routeToPods(d, ctx, s, app, body, podRequest(ctx, body));
}
