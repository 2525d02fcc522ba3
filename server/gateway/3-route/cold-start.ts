// Step 3, route: scale from zero. A request for an app without a usable pod is held until one is ready (the first
// held request wakes the autoscaler at once), the app is deleted or fails, the hold times out, or the client leaves.
// While requests wait, the app's pods that are listed but not ready yet are health-checked every 100 ms, so a request
// goes on at the first pass instead of after the readiness probe period and the EndpointSlice update. Held streams get
// keep-alive lines (hold.ts). A gateway that cannot wake an app (its load reports are refused, or go nowhere) says so
// at once.
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import type { AppState } from "./app-state.ts";
import type { GatewayConfig } from "../config.ts";
import { gatewayError } from "../errors.ts";
import { keepAliveLine, NDJSON_HEAD, SSE_HEAD, streamKind } from "./hold.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { AppInfo, AppSource, Endpoint, LoadSink } from "../ports.ts";
import type { Upstreams } from "../4-forward/proxy.ts";
import type { RequestBody, RequestContext } from "../context.ts";

/** How long the gateway's own passed health check of a not-yet-ready pod counts (the EndpointSlice catches up). */
const PROBED_MS = 30_000;
const PROBE_EVERY_MS = 100;
/** Held streams get their first keep-alive (and so their status line) after this long, not at once. */
const FIRST_KEEPALIVE_MS = 1000;

export interface ColdStartDeps {
  apps: AppSource;
  hold: GatewayConfig["hold"];
  load?: LoadSink;
  metrics: GatewayMetrics;
  logger: Logger;
  upstreams: Upstreams;
  now: () => number;
}

/** Where a held request ends: a pod, an error to answer, or the client left. */
export type Waited = Endpoint | AppError | "closed";

export class ColdStart {
  private readonly d: ColdStartDeps;

  constructor(d: ColdStartDeps) {
    this.d = d;
  }

  /** A usable pod at once (the common case, without a promise), or undefined. `known`: the app, just looked up. */
  pickNow(ctx: RequestContext, s: AppState, known?: AppInfo, avoid?: string): Endpoint | undefined {
    if (ctx.cause) return undefined;
    const app = known ?? this.d.apps.get(ctx.org, ctx.app);
    if (!app || (s.uid && app.uid !== s.uid)) return undefined;
    return s.pick(this.d.apps.endpoints(ctx.org, ctx.app), this.d.now(), avoid, ctx.route);
  }

  /**
   * A usable pod for the request: at once when the app has one, else after holding the request until a pod is ready,
   * the app is deleted or fails, the deadline passes, or the client leaves ("closed").
   */
  endpointFor(ctx: RequestContext, s: AppState, body: RequestBody, deadline: number, avoid?: string): Promise<Waited> {
    const pick = (): Endpoint | AppError | undefined => {
      if (ctx.cause) return ctx.cause;
      const app = this.d.apps.get(ctx.org, ctx.app);
      if (!app || (s.uid && app.uid !== s.uid)) return gatewayError(404, `app "${ctx.app}" was deleted`);
      const eps = this.d.apps.endpoints(ctx.org, ctx.app);
      const ep = s.pick(eps, this.d.now(), avoid, ctx.route);
      if (ep) return ep;
      if (app.failed)
        return new AppError(
          "APP_UNAVAILABLE",
          `app "${ctx.app}" cannot start: ${app.failed.reason}: ${app.failed.message}`,
          {
            headers: { "retry-after": "30" },
          },
        );
      const why = this.d.load?.cannotWake;
      // No pod at all and none asked for: nothing this gateway does can change that.
      if (why !== undefined && eps.length === 0 && !app.replicas)
        return new AppError(
          "APP_UNAVAILABLE",
          `app "${ctx.app}" has no running replica and this gateway cannot start one: ${why}`,
          { headers: { "retry-after": "30" } },
        );
      return undefined;
    };
    const first = pick();
    if (first) return Promise.resolve(first);
    if (ctx.res.destroyed) return Promise.resolve("closed");
    if (s.held >= this.d.hold.maxPerApp) {
      this.d.metrics.rateLimited.inc({ org: ctx.org, limit: "held" });
      return Promise.resolve(
        new AppError("TOO_MANY_HELD", `too many requests are waiting for app "${ctx.app}" to start`, {
          headers: { "retry-after": "5" },
        }),
      );
    }
    return this.hold(ctx, s, body, deadline, pick);
  }

  private hold(
    ctx: RequestContext,
    s: AppState,
    body: RequestBody,
    deadline: number,
    pick: () => Endpoint | AppError | undefined,
  ): Promise<Waited> {
    const now = this.d.now();
    s.held++;
    if (s.warmUntil <= now) {
      s.warmStarted = now;
      this.d.logger.info({ org: ctx.org, app: ctx.app }, "holding requests while the app starts");
    }
    s.warmUntil = Math.max(s.warmUntil, deadline);
    this.d.load?.wake();
    this.probe(s);
    const kind = ctx.committed ? undefined : streamKind(ctx.api, body.json);
    return new Promise((resolve) => {
      let keepAlive: NodeJS.Timeout | undefined;
      const sendKeepAlive = () => {
        if (ctx.res.destroyed || ctx.res.writableEnded || !kind) return;
        if (!ctx.committed) {
          ctx.committed = kind;
          ctx.sentType = kind === "sse" ? SSE_HEAD["content-type"] : NDJSON_HEAD["content-type"];
          ctx.res.writeHead(200, { ...(kind === "sse" ? SSE_HEAD : NDJSON_HEAD), "x-request-id": ctx.requestId });
        }
        ctx.res.write(keepAliveLine(ctx.api, kind, body.json, new Date(this.d.now())));
        keepAlive = setTimeout(sendKeepAlive, this.d.hold.keepAliveSeconds * 1000);
      };
      if (kind) keepAlive = setTimeout(sendKeepAlive, FIRST_KEEPALIVE_MS);
      const done = (x: Waited) => {
        s.waiters.delete(check);
        s.held--;
        clearTimeout(timer);
        if (keepAlive) clearTimeout(keepAlive);
        ctx.res.off("close", onClose);
        resolve(x);
      };
      const check = () => {
        const x = pick();
        if (x && !(x instanceof AppError)) this.warmed(s, this.d.now());
        if (x) done(x);
      };
      const onClose = () => done("closed");
      const timeout = new AppError(
        "WARMUP_TIMEOUT",
        `app "${ctx.app}" did not get a ready replica within ${this.d.hold.timeoutSeconds} s`,
        { headers: { "retry-after": "10" } },
      );
      const timer = setTimeout(() => done(timeout), Math.max(0, deadline - now));
      s.waiters.add(check);
      ctx.res.once("close", onClose);
    });
  }

  /** Health checks of the app's listed, not yet ready pods while requests wait (or the app warms). */
  private probe(s: AppState): void {
    if (s.probing) return;
    s.probing = true;
    const loop = async () => {
      while (s.waiters.size > 0 || s.warmUntil > this.d.now()) {
        const now = this.d.now();
        const eps = this.d.apps.endpoints(s.org, s.name);
        if (s.pick(eps, now)) {
          this.warmed(s, now);
          s.wake();
          break;
        }
        if (!this.d.apps.get(s.org, s.name)) {
          s.warmUntil = 0;
          s.wake();
          break;
        }
        await Promise.all(
          eps
            .filter((ep) => !ep.ready && !((s.probed.get(ep.id) ?? 0) > now))
            .map(async (ep) => {
              if ((await this.d.upstreams.status(ep.origin, "/health", 1000)) === 200) {
                s.probed.set(ep.id, this.d.now() + PROBED_MS);
                s.failing.delete(ep.id); // it refused a moment ago, but it answers now
              }
            }),
        );
        s.wake();
        await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
      }
      s.probing = false;
    };
    void loop();
  }

  /** The app has a usable pod again: the end of a cold start, if one was running. */
  warmed(s: AppState, now: number): void {
    if (s.warmUntil <= 0) return;
    s.warmUntil = 0;
    this.d.metrics.coldStart.observe({ org: s.org, app: s.name }, (now - s.warmStarted) / 1000);
    this.d.logger.info({ org: s.org, app: s.name, ms: now - s.warmStarted }, "app ready");
  }
}
