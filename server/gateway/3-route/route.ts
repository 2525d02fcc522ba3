// Step 3, route: which pod takes the request, and again when a try fails. The app's PrefixHash key (prefix-key.ts)
// or its least loaded pod (app-state.ts's pick), at once when the app has a usable pod, else after holding the
// request while the app scales from zero (cold-start.ts). Each try is step 4 (4-forward/forward.ts); the retry rule
// (retryOf) decides whether the request goes to a pod again.
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { attempt, fromPod, type PodRequest } from "../4-forward/forward.ts";
import type { ProxyOutcome, Upstreams } from "../4-forward/proxy.ts";
import type { GatewayConfig } from "../config.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { Outcome } from "../outcome.ts";
import type { AppInfo, Endpoint } from "../ports.ts";
import type { AppState, PrefixRoute } from "./app-state.ts";
import type { ColdStart } from "./cold-start.ts";
import { prefixKey } from "./prefix-key.ts";
import type { RequestBody, RequestContext } from "../context.ts";

export interface RouteDeps {
  config: Pick<GatewayConfig, "upstream" | "hold">;
  coldStart: ColdStart;
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  logger: Logger;
  now: () => number;
}

/** How long a pod that refused a connection is skipped. */
const FAILING_MS = 1000;

/** The request's PrefixHash route when its app routes by PrefixHash and the route and body give a key. Pure. */
export function prefixRoute(app: AppInfo, ctx: RequestContext, body: RequestBody): PrefixRoute | undefined {
  const fields = ctx.api.prefixHash;
  if (app.loadBalancing?.strategy !== "PrefixHash" || !fields || !body.json) return undefined;
  const settings = app.loadBalancing.prefixHash;
  const session = ctx.req.headers["x-session-id"];
  const key = prefixKey(
    fields,
    body.json,
    settings.prefixCharLength,
    typeof session === "string" ? session : undefined,
  );
  return key === undefined ? undefined : { key, settings };
}

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

/** A pod for the request (held while there is none), its answer, and the retry rule. */
export async function routeToPods(
  d: RouteDeps,
  ctx: RequestContext,
  s: AppState,
  app: AppInfo,
  body: RequestBody,
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
    s.load.set(ep.id, (s.load.get(ep.id) ?? 0) + 1); // the pod's load counts the request while the try runs
    let r: ProxyOutcome;
    try {
      r = await attempt(d.upstreams, ctx, ep, o);
    } finally {
      s.load.set(ep.id, (s.load.get(ep.id) ?? 1) - 1);
    }
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
