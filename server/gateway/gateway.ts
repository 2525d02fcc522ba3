// The gateway's request pipeline: route → auth → limits → body → (hold while the app scales from zero) → proxy to
// the least-loaded ready pod → usage. It reads apps, pods, keys and usage only through the interfaces of ports.ts, so
// the same code serves the cluster (kube/ watches) and a one-off local server (memory.ts). No Kubernetes API call is
// made per request; everything comes from caches.
import type { IncomingRequest, OutgoingResponse } from "./http1-server.ts";
import { AppError } from "../common/errors.ts";
import { givenRequestId } from "../common/request-id.ts";
import { infoLineWriter, type Logger } from "../common/logger.ts";
import { originMatches } from "../common/origins.ts";
import { authorizationOf, decideAccess, type KeyCheck } from "./auth.ts";
import type { GatewayConfig } from "./config.ts";
import { EXPOSED_HEADERS, preflightHeaders } from "./cors.ts";
import { gatewayError, sendGatewayError, type ErrorShape } from "./errors.ts";
import { keepAliveLine, NDJSON_HEAD, SSE_HEAD, streamKind, type StreamKind } from "./hold.ts";
import { KeyVerifier } from "./key-verifier.ts";
import { KeyLimiter, limitRefusal, type LimitResult } from "./limiter.ts";
import { createManagement, type ManagementHandler } from "./management.ts";
import { GatewayMetrics, type AppStats } from "./metrics.ts";
import { AppState, type Active } from "./app-state.ts";
import { KEEP_ALIVE_ROUTES, readRequestBody, withoutKeepAlive } from "./body.ts";
import type { AppInfo, AppSource, Endpoint, KeyStore, LoadSink, UsageStore } from "./ports.ts";
import { isTimeoutError, upstreamHeaders, Upstreams, type ProxyOutcome } from "./proxy.ts";
import { requestIds } from "./request-id.ts";
import { route } from "./routing.ts";
import { addStreamUsage, isStreamType } from "./usage.ts";
import type { AppAdmin } from "./app-admin.ts";
import { asAppRequest, presetKeyOf } from "./console/forward.ts";
import type { SessionStore } from "./console/session.ts";
import { consoleManagement } from "./console/wire.ts";

export interface GatewayDeps {
  config: GatewayConfig;
  apps: AppSource;
  keys: KeyStore;
  usage?: UsageStore;
  load?: LoadSink;
  logger: Logger;
  /** Base URL of the gateway as users reach it (for the management API's app URLs); apps' status.url otherwise. */
  publicUrl?: string;
  /** The console's sessions (in memory without one) and the app operations of the management API (none: 501). */
  sessions?: SessionStore;
  appAdmin?: AppAdmin;
  /** The built console (default: the package's dist/console). */
  consoleAssets?: string;
  now?: () => number;
}

/** How long a pod that refused a connection is skipped. */
const FAILING_MS = 1000;
/** How long the gateway's own passed health check of a not-yet-ready pod counts (the EndpointSlice catches up). */
const PROBED_MS = 30_000;
const PROBE_EVERY_MS = 100;
/** Held streams get their first keep-alive (and so their status line) after this long, not at once. */
const FIRST_KEEPALIVE_MS = 1000;

interface RequestContext extends Active {
  req: IncomingRequest;
  res: OutgoingResponse;
  requestId: string;
  t0: number;
  org: string;
  app: string;
  rest: string;
  query: string;
  shape: ErrorShape;
  keyId: string;
  /** A held streaming request whose status line and keep-alives went out already. */
  committed?: StreamKind;
  /** Content type of the answer sent so far (an error then ends a stream with an error event of its kind). */
  sentType?: string;
  /** Time to the pod's first byte (ms since t0), once known. */
  ttfbMs?: number;
}

/** A timeout of the upstream client (no answer head, or too long a pause in the answer). */
/**
 * Sends `100 Continue` to a client that waits for it (`Expect: 100-continue`), once its body is wanted: a request
 * refused before (401, 404, 413 by its Content-Length) is answered without the body ever being sent (node then closes
 * the connection). Called once per request, by the path that reads (or drains) its body.
 */
function wantBody(req: IncomingRequest, res: OutgoingResponse): void {
  const expect = req.headers.expect;
  if (expect !== undefined && !res.headersSent && expect.toLowerCase() === "100-continue") res.writeContinue();
}

/** A request that ended, waiting for its metrics, usage record and log line (Gateway.flushEnded). */
interface Ended {
  ctx: RequestContext;
  stats: AppStats;
  status: number;
  ms: number;
  at: number;
  tokens: { prompt: number; completion: number } | undefined;
}

/** Ended requests are accounted for this long after they end at most (metrics scrapes and usage reads flush first). */
const ACCOUNT_EVERY_MS = 50;
/** ...or once this many are waiting. */
const ACCOUNT_BATCH = 256;

export class Gateway {
  readonly metrics: GatewayMetrics;
  readonly upstreams: Upstreams;
  private readonly d: GatewayDeps;
  private readonly states = new Map<string, AppState>();
  private readonly verifier: KeyVerifier;
  private readonly limiter: KeyLimiter;
  private readonly management: ManagementHandler;
  private readonly consoleSessions: { start(): void; stop(): void };
  private readonly now: () => number;
  /** The access log: one JSON line per request, built by hand (logger.ts infoLineWriter). */
  private readonly accessLog: (fields: string, msg: string, at?: number) => void;
  private ended_: Ended[] = [];
  private readonly newRequestId = requestIds();
  private accountTimer: NodeJS.Timeout | undefined;
  private closing = false;
  private running = 0;
  private idle: (() => void) | undefined;

  constructor(d: GatewayDeps) {
    this.d = d;
    this.now = d.now ?? Date.now;
    this.accessLog = infoLineWriter(d.logger);
    this.metrics = new GatewayMetrics(() =>
      [...this.states.values()].map((s) => ({ org: s.org, app: s.name, inFlight: s.inFlight, held: s.held })),
    );
    const c = d.config;
    this.upstreams = new Upstreams({
      connectionsPerPod: c.upstream.connectionsPerPod,
      headersTimeoutMs: c.upstream.headersTimeoutSeconds * 1000,
      idleTimeoutMs: c.upstream.idleTimeoutSeconds * 1000,
    });
    this.verifier = new KeyVerifier(d.keys, c.keyCacheSeconds * 1000);
    this.limiter = new KeyLimiter(
      { requestsPerSecond: c.limits.requestsPerSecond, burst: c.limits.burst, concurrent: c.limits.concurrent },
      c.limits.orgs,
    );
    const consoleParts = consoleManagement({
      config: c.console,
      ...(d.sessions ? { sessions: d.sessions } : {}),
      ...(d.appAdmin ? { admin: d.appAdmin } : {}),
      ...(d.consoleAssets ? { assetsDir: d.consoleAssets } : {}),
      apps: d.apps,
      keys: d.keys,
      checkHeader: (req) => this.checkRequest(req),
      checkKey: (key) => this.verifier.checkAuthorization(`Key ${key}`, this.now()),
      forwardToApp: (req, res, org, app, rest, key) => {
        asAppRequest(req, org, app, rest, key);
        this.handle(req, res);
      },
      maxBodyBytes: c.maxBodyBytes,
      ...(d.publicUrl ? { publicUrl: d.publicUrl } : {}),
      logger: d.logger,
      now: this.now,
    });
    this.consoleSessions = consoleParts.sessions;
    this.consoleSessions.start();
    this.management = createManagement({
      ...consoleParts.deps,
      usageDays: c.usage.retentionDays,
      apps: d.apps,
      keys: d.keys,
      ...(d.usage ? { usage: this.usageAfterFlush(d.usage) } : {}),
      limit: (key) => this.acquireLimit(key),
      maxBodyBytes: c.maxBodyBytes,
      logger: d.logger,
      ...(d.publicUrl ? { publicUrl: d.publicUrl } : {}),
      now: this.now,
      onAuthFailure: (reason) => this.metrics.authFailures.inc({ reason }),
    });
    d.apps.onChange((org, name) => this.appChanged(org, name));
  }

  /** A request slot under the key's limits (its org's overrides apply), counted when refused. */
  private acquireLimit(key: { id: string; org: string }): LimitResult {
    const l = this.limiter.acquire(key.id, key.org, this.now());
    if (!l.ok) this.metrics.rateLimited.inc({ org: key.org, limit: l.limit });
    return l;
  }

  /** The usage store as the management API reads it: with the requests that ended just now. */
  private usageAfterFlush(usage: UsageStore): Pick<UsageStore, "query"> {
    return {
      query: (org, from, to) => {
        this.flushEnded();
        return usage.query(org, from, to);
      },
    };
  }

  /** True when the caches have their first listing (and the gateway is not shutting down). */
  get ready(): boolean {
    return (
      !this.closing &&
      this.d.apps.synced &&
      this.d.keys.synced &&
      (this.d.usage?.synced ?? true) &&
      (this.d.sessions?.synced ?? true)
    );
  }

  /** In-flight requests per app (held ones included; a warming app counts at least 1), for the autoscaler. */
  loadSnapshot(): Array<{ namespace: string; name: string; inFlight: number }> {
    const now = this.now();
    const out: Array<{ namespace: string; name: string; inFlight: number }> = [];
    for (const s of this.states.values()) {
      const n = Math.max(s.inFlight, s.warmUntil > now ? 1 : 0);
      if (n > 0) out.push({ namespace: s.org, name: s.name, inFlight: n });
    }
    return out;
  }

  /** The request listener of the gateway's server (http-server.ts). */
  readonly handle = (req: IncomingRequest, res: OutgoingResponse): void => {
    const t0 = performance.now();
    const requestId = givenRequestId(req.headers["x-request-id"]) ?? this.newRequestId();
    const origin = req.headers.origin;
    if (origin !== undefined && originMatches(origin, this.d.config.corsOrigins)) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("vary", "Origin");
      res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
      if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
        res.writeHead(204, {
          ...preflightHeaders(req.headers["access-control-request-headers"]),
          "x-request-id": requestId,
        });
        res.end();
        return;
      }
    }
    const r = route(req.method ?? "GET", req.url ?? "/");
    switch (r.kind) {
      case "app":
        this.running++;
        this.serveApp({
          req,
          res,
          requestId,
          t0,
          org: r.org,
          app: r.app,
          rest: r.rest,
          query: r.query,
          shape: r.shape,
          keyId: "-",
        }).then(this.ended, (err: unknown) => {
          this.d.logger.error({ err: String(err), requestId }, "request failed");
          sendGatewayError(res, r.shape, gatewayError(502, "the request failed in the gateway"), {
            "x-request-id": requestId,
          });
          this.ended();
        });
        return;
      case "management":
        wantBody(req, res); // small JSON bodies, read by the handler: asked for at once
        this.management(req, res, r.rest, r.query, requestId).catch((err: unknown) => {
          this.d.logger.error({ err: String(err), requestId }, "management request failed");
          sendGatewayError(res, "openai", new AppError("INTERNAL", "internal error"), { "x-request-id": requestId });
        });
        return;
      case "system":
        if (r.path === "/metrics" && this.d.config.metricsListen) {
          sendGatewayError(res, "ollama", gatewayError(404, "/metrics is served on the metrics address"));
          return;
        }
        void this.system(r.path, res);
        return;
      case "error": {
        const headers: Record<string, string> = { "x-request-id": requestId };
        if (r.allow) headers.allow = r.allow;
        sendGatewayError(res, r.shape, gatewayError(r.status, r.message), headers);
        return;
      }
    }
  };

  private readonly ended = (): void => {
    if (--this.running === 0) this.idle?.();
  };

  /** The listener of the metrics address (config metricsListen): /metrics, /healthz, /readyz only. */
  readonly handleSystem = (req: IncomingRequest, res: OutgoingResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics" && path !== "/healthz" && path !== "/readyz")
      sendGatewayError(res, "ollama", gatewayError(404, `${path} not found`));
    else if (req.method === "GET" || req.method === "HEAD") void this.system(path, res);
    else
      sendGatewayError(res, "ollama", gatewayError(405, `method ${req.method} not allowed on ${path}`), {
        allow: "GET, HEAD",
      });
  };

  private async system(path: "/healthz" | "/readyz" | "/metrics", res: OutgoingResponse): Promise<void> {
    if (path === "/metrics") {
      this.flushEnded();
      const text = await this.metrics.registry.metrics();
      res.writeHead(200, { "content-type": this.metrics.registry.contentType });
      res.end(text);
      return;
    }
    const ok = path === "/healthz" ? true : this.ready;
    const body = JSON.stringify({ status: ok ? "ok" : this.closing ? "shutting down" : "syncing" });
    res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
    res.end(body);
  }

  private checkRequest(req: IncomingRequest): KeyCheck {
    const preset = presetKeyOf(req); // the console's playground, as the key of its session
    if (preset) return { ok: true, key: preset };
    return this.verifier.checkAuthorization(authorizationOf(req.headers.authorization, req.rawHeaders), this.now());
  }

  private state(org: string, name: string): AppState {
    const k = `${org}/${name}`;
    let s = this.states.get(k);
    if (!s) {
      s = new AppState(org, name, this.metrics.app(org, name));
      this.states.set(k, s);
    }
    return s;
  }

  private fail(ctx: RequestContext, status: number, message: string, headers: Record<string, string> = {}): number {
    this.sendError(ctx, gatewayError(status, message), headers);
    return status;
  }

  private sendError(ctx: RequestContext, e: AppError, headers: Record<string, string> = {}): void {
    sendGatewayError(ctx.res, ctx.shape, e, { ...headers, "x-request-id": ctx.requestId }, ctx.sentType);
  }

  private async serveApp(ctx: RequestContext): Promise<void> {
    const { req, res } = ctx;
    if (this.closing) {
      this.fail(ctx, 503, "the gateway is shutting down", { "retry-after": "1", connection: "close" });
      return;
    }
    const app = this.d.apps.get(ctx.org, ctx.app);
    if (!app) {
      // Counted under org and app "-": the names are the caller's, and a series per made-up name would grow the
      // gateway's memory and Prometheus's series without bound, for anyone who can send a request.
      this.countOnly(ctx, this.fail(ctx, 404, `no app "${ctx.app}" in org "${ctx.org}"`), this.metrics.app("-", "-"));
      return;
    }
    const decision = decideAccess(app.auth, ctx.org, this.checkRequest(req));
    if (!decision.allow) {
      this.metrics.authFailures.inc({ reason: decision.reason });
      const headers: Record<string, string> =
        decision.status === 401 ? { "www-authenticate": 'Key realm="gantry"' } : {};
      this.countOnly(ctx, this.fail(ctx, decision.status, decision.message, headers));
      return;
    }
    if (decision.key) ctx.keyId = decision.key.id;
    let release: (() => void) | undefined;
    if (decision.key) {
      // Limits are the key's: its org's overrides apply (also when it calls a shared app of another org).
      const l = this.acquireLimit(decision.key);
      if (!l.ok) {
        const { message, headers } = limitRefusal(l);
        this.countOnly(ctx, this.fail(ctx, 429, message, headers));
        return;
      }
      release = l.release;
    }
    const s = this.state(ctx.org, ctx.app);
    s.uid ??= app.uid;
    s.inFlight++;
    let active = false;
    let status = 0;
    let tokens: { prompt: number; completion: number } | undefined;
    try {
      // GET and HEAD have no body to wait for: no await on the way (an event-loop turn of a small request's cost).
      const body = req.method === "GET" || req.method === "HEAD" ? this.skipBody(ctx) : await this.readBody(ctx);
      if (body === "done") {
        status = res.headersSent ? res.statusCode : 499;
        return;
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
      const headers = upstreamHeaders(req.rawHeaders, ctx.requestId, req.socket.remoteAddress);
      if (payload) headers.push("content-length", String(payload.length)); // none: no body (RFC 9112 §6.3)
      // Deadlines from the first moment one is needed (the common request needs none).
      let t: number | undefined;
      const retry = this.d.config.upstream.retrySeconds * 1000;
      s.active.add(ctx);
      active = true;
      let known: AppInfo | undefined = app;
      let resets = 0;
      for (;;) {
        const ep =
          this.pickNow(ctx, s, known) ??
          (await this.endpointFor(
            ctx,
            s,
            body,
            (t ??= this.now()) + (ctx.committed ? retry : this.d.config.hold.timeoutSeconds * 1000),
          ));
        known = undefined;
        if (ep instanceof AppError) {
          status = ep.status;
          this.sendError(ctx, ep);
          return;
        }
        if (ep === "closed") {
          status = 499;
          return;
        }
        s.load.set(ep.id, (s.load.get(ep.id) ?? 0) + 1);
        const f = this.upstreams.forward(ep.origin, res, {
          method: req.method ?? "GET",
          path: ctx.rest + ctx.query,
          headers,
          body: payload,
          requestId: ctx.requestId,
          committed: ctx.committed,
          dropUsageEvent,
          meter: req.method === "POST" && ctx.rest !== "/api/show",
          sink: ctx,
        });
        ctx.forwarding = f;
        if (ctx.cause) f.abort(ctx.cause.message);
        let outcome: ProxyOutcome;
        try {
          outcome = await f.done;
        } finally {
          ctx.forwarding = undefined;
          s.load.set(ep.id, (s.load.get(ep.id) ?? 1) - 1);
        }
        if (outcome.kind === "refused") {
          s.failing.set(ep.id, this.now() + FAILING_MS);
          s.probed.delete(ep.id);
          this.metrics.upstreamRetries.inc({ org: ctx.org, app: ctx.app });
          if (this.now() < (t ??= this.now()) + retry && !ctx.cause && !res.destroyed) {
            this.d.logger.debug(
              { requestId: ctx.requestId, pod: ep.id, err: outcome.error.message },
              "pod refused; retrying",
            );
            continue;
          }
          status = this.fail(ctx, 502, `the app's pods refused the connection (${outcome.error.message})`);
          return;
        }
        if (outcome.kind === "reset" && resets++ === 0 && !ctx.cause && !res.destroyed) {
          // Once only: a request that itself kills pods must not take down every pod of the app.
          s.failing.set(ep.id, this.now() + FAILING_MS);
          s.probed.delete(ep.id);
          this.metrics.upstreamRetries.inc({ org: ctx.org, app: ctx.app });
          this.d.logger.warn(
            { requestId: ctx.requestId, org: ctx.org, app: ctx.app, pod: ep.id, err: outcome.error.message },
            "the pod broke the connection before answering; trying another pod",
          );
          continue;
        }
        if (outcome.kind === "reset") outcome = { kind: "failed", error: outcome.error, started: false };
        if (outcome.kind === "done") {
          status = outcome.status;
          tokens = outcome.tokens;
          return;
        }
        // A broken-off answer is metered for what the client got (proxy.ts Forward: the token events passed).
        tokens = outcome.tokens;
        if (outcome.kind === "aborted") {
          if (ctx.cause) {
            status = ctx.cause.status;
            this.sendError(ctx, ctx.cause);
          } else status = 499;
          return;
        }
        this.d.logger.warn(
          { requestId: ctx.requestId, org: ctx.org, app: ctx.app, pod: ep.id, err: outcome.error.message },
          "the pod's answer broke off",
        );
        if (!outcome.status && isTimeoutError(outcome.error)) {
          status = 504;
          this.sendError(ctx, gatewayError(504, `the app did not answer in time (${outcome.error.message})`));
          return;
        }
        status = outcome.status && !outcome.started ? outcome.status : 502;
        this.sendError(ctx, gatewayError(502, `the app's answer broke off: ${outcome.error.message}`));
        return;
      }
    } finally {
      release?.();
      if (active) s.active.delete(ctx);
      s.inFlight--;
      this.finishRequest(ctx, s, status || 499, tokens);
    }
  }

  /**
   * A GET's or HEAD's body is not forwarded: drained (413 when it says it is over the limit). Without one there is
   * nothing to drain (node:http ends the request itself when the answer is done).
   */
  private skipBody(ctx: RequestContext): null | "done" {
    const max = this.d.config.maxBodyBytes;
    if (Number(ctx.req.headers["content-length"] ?? 0) > max) {
      this.fail(ctx, 413, `request body is larger than ${max} bytes`, { connection: "close" });
      return "done";
    }
    const h = ctx.req.headers;
    if (h["content-length"] === undefined && h["transfer-encoding"] === undefined) return null; // no body to drain
    wantBody(ctx.req, ctx.res);
    ctx.req.resume();
    return null;
  }

  /** Reads the request body (bounded): the Buffer, null when there is none, or "done" when already answered. */
  private async readBody(ctx: RequestContext): Promise<Buffer | null | "done"> {
    const max = this.d.config.maxBodyBytes;
    if (Number(ctx.req.headers["content-length"] ?? 0) <= max) wantBody(ctx.req, ctx.res);
    const body = await readRequestBody(ctx.req, max);
    if (body === "too-large") {
      this.fail(ctx, 413, `request body is larger than ${max} bytes`, { connection: "close" });
      return "done";
    }
    return body === "aborted" ? "done" : body;
  }

  /** A usable pod at once (the common case, without a promise), or undefined. `known`: the app, just looked up. */
  private pickNow(ctx: RequestContext, s: AppState, known?: AppInfo): Endpoint | undefined {
    if (ctx.cause) return undefined;
    const app = known ?? this.d.apps.get(ctx.org, ctx.app);
    if (!app || (s.uid && app.uid !== s.uid)) return undefined;
    return s.pick(this.d.apps.endpoints(ctx.org, ctx.app), this.now());
  }

  /**
   * A usable pod for the request: at once when the app has one, else after holding the request until a pod is ready
   * (scale from zero), the app is deleted or fails, the deadline passes, or the client leaves ("closed").
   */
  private async endpointFor(
    ctx: RequestContext,
    s: AppState,
    body: Buffer | null,
    deadline: number,
  ): Promise<Endpoint | AppError | "closed"> {
    const pick = (): Endpoint | AppError | undefined => {
      if (ctx.cause) return ctx.cause;
      const app = this.d.apps.get(ctx.org, ctx.app);
      if (!app || (s.uid && app.uid !== s.uid)) return gatewayError(404, `app "${ctx.app}" was deleted`);
      const ep = s.pick(this.d.apps.endpoints(ctx.org, ctx.app), this.now());
      if (ep) return ep;
      if (app.failed)
        return new AppError(
          "APP_UNAVAILABLE",
          `app "${ctx.app}" cannot start: ${app.failed.reason}: ${app.failed.message}`,
          {
            headers: { "retry-after": "30" },
          },
        );
      return undefined;
    };
    const first = pick();
    if (first) return first;
    if (ctx.res.destroyed) return "closed";
    if (s.held >= this.d.config.hold.maxPerApp) {
      this.metrics.rateLimited.inc({ org: ctx.org, limit: "held" });
      return new AppError("TOO_MANY_HELD", `too many requests are waiting for app "${ctx.app}" to start`, {
        headers: { "retry-after": "5" },
      });
    }
    return this.hold(ctx, s, body, deadline, pick);
  }

  private hold(
    ctx: RequestContext,
    s: AppState,
    body: Buffer | null,
    deadline: number,
    pick: () => Endpoint | AppError | undefined,
  ): Promise<Endpoint | AppError | "closed"> {
    const now = this.now();
    s.held++;
    if (s.warmUntil <= now) {
      s.warmStarted = now;
      this.d.logger.info({ org: ctx.org, app: ctx.app }, "holding requests while the app starts");
    }
    s.warmUntil = Math.max(s.warmUntil, deadline);
    this.d.load?.wake();
    this.probe(s);
    const kind = ctx.committed ? undefined : streamKind(ctx.rest, body);
    return new Promise((resolve) => {
      let keepAlive: NodeJS.Timeout | undefined;
      const sendKeepAlive = () => {
        if (ctx.res.destroyed || ctx.res.writableEnded || !kind) return;
        if (!ctx.committed) {
          ctx.committed = kind;
          ctx.sentType = kind === "sse" ? SSE_HEAD["content-type"] : NDJSON_HEAD["content-type"];
          ctx.res.writeHead(200, { ...(kind === "sse" ? SSE_HEAD : NDJSON_HEAD), "x-request-id": ctx.requestId });
        }
        ctx.res.write(keepAliveLine(kind, ctx.rest, body, new Date(this.now())));
        keepAlive = setTimeout(sendKeepAlive, this.d.config.hold.keepAliveSeconds * 1000);
      };
      if (kind) keepAlive = setTimeout(sendKeepAlive, FIRST_KEEPALIVE_MS);
      const done = (x: Endpoint | AppError | "closed") => {
        s.waiters.delete(check);
        s.held--;
        clearTimeout(timer);
        if (keepAlive) clearTimeout(keepAlive);
        ctx.res.off("close", onClose);
        resolve(x);
      };
      const check = () => {
        const x = pick();
        if (x && !(x instanceof AppError)) this.warmed(s, this.now());
        if (x) done(x);
      };
      const onClose = () => done("closed");
      const timer = setTimeout(
        () =>
          done(
            new AppError(
              "WARMUP_TIMEOUT",
              `app "${ctx.app}" did not get a ready replica within ${this.d.config.hold.timeoutSeconds} s`,
              { headers: { "retry-after": "10" } },
            ),
          ),
        Math.max(0, deadline - now),
      );
      s.waiters.add(check);
      ctx.res.once("close", onClose);
    });
  }

  /**
   * While requests wait for an app, its pods that are not ready yet are health-checked here every 100 ms: the first
   * pass sends the request on, instead of waiting for the pod's readiness probe period and the EndpointSlice update.
   */
  private probe(s: AppState): void {
    if (s.probing) return;
    s.probing = true;
    const loop = async () => {
      while (s.waiters.size > 0 || s.warmUntil > this.now()) {
        const now = this.now();
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
              if (await this.healthy(ep.origin)) {
                s.probed.set(ep.id, this.now() + PROBED_MS);
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
  private warmed(s: AppState, now: number): void {
    if (s.warmUntil <= 0) return;
    s.warmUntil = 0;
    this.metrics.coldStart.observe({ org: s.org, app: s.name }, (now - s.warmStarted) / 1000);
    this.d.logger.info({ org: s.org, app: s.name, ms: now - s.warmStarted }, "app ready");
  }

  private async healthy(origin: string): Promise<boolean> {
    return (await this.upstreams.status(origin, "/health", 1000)) === 200;
  }

  /** Metrics and the log line of a request refused before it reached the app. */
  private countOnly(ctx: RequestContext, status: number, stats = this.metrics.app(ctx.org, ctx.app)): void {
    stats.count(status);
    this.logRequest(ctx, status, performance.now() - ctx.t0, undefined);
  }

  /**
   * A request ended: its accounting (metrics, usage record, access log line) is queued and done in batches, after the
   * answer went out and off the path of the next request on a busy connection.
   */
  private finishRequest(
    ctx: RequestContext,
    s: AppState,
    status: number,
    tokens: { prompt: number; completion: number } | undefined,
  ) {
    this.ended_.push({ ctx, stats: s.stats, status, ms: performance.now() - ctx.t0, at: this.now(), tokens });
    if (this.ended_.length >= ACCOUNT_BATCH) this.flushEnded();
    else this.accountTimer ??= setTimeout(this.flushEnded, ACCOUNT_EVERY_MS).unref();
  }

  /** Accounts for the ended requests: before a metrics scrape or usage read sees the totals, and on a timer. */
  readonly flushEnded = (): void => {
    if (this.accountTimer) clearTimeout(this.accountTimer);
    this.accountTimer = undefined;
    const batch = this.ended_;
    if (batch.length === 0) return;
    this.ended_ = [];
    for (const e of batch) {
      const { ctx, stats, status, ms, tokens } = e;
      stats.count(status);
      stats.duration.observe(ms / 1000);
      if (ctx.ttfbMs !== undefined) stats.ttfb.observe(ctx.ttfbMs / 1000);
      const k = stats.key(ctx.keyId);
      k.requests++;
      if (tokens) {
        k.prompt += tokens.prompt;
        k.completion += tokens.completion;
      }
      this.d.usage?.record({
        org: ctx.org,
        app: ctx.app,
        keyId: ctx.keyId,
        status,
        promptTokens: tokens?.prompt ?? 0,
        completionTokens: tokens?.completion ?? 0,
        durationMs: ms,
        firstTokenMs: isStreamType(ctx.sentType) ? ctx.ttfbMs : undefined,
        at: e.at,
      });
      this.logRequest(ctx, status, ms, tokens, e.at);
    }
  };

  /**
   * The access log line. Its fields need no escaping but the path: the request id is one givenRequestId keeps or one
   * the gateway made, org and app are DNS labels, the method passed node's parser, the key id is hex (or "-").
   */
  private logRequest(
    ctx: RequestContext,
    status: number,
    ms: number,
    tokens: { prompt: number; completion: number } | undefined,
    at?: number,
  ): void {
    this.accessLog(
      `"requestId":"${ctx.requestId}","org":"${ctx.org}","app":"${ctx.app}","method":"${ctx.req.method}",` +
        `"path":${JSON.stringify(ctx.rest)},"status":${status},"keyId":"${ctx.keyId}","ms":${Math.round(ms * 10) / 10}` +
        (tokens ? `,"promptTokens":${tokens.prompt},"completionTokens":${tokens.completion}` : ""),
      status === 499 ? "client closed the connection" : "request",
      at,
    );
  }

  /** An app or its pods changed: wake its held requests; a deleted (or re-created) app fails what it was doing. */
  private appChanged(org: string, name: string): void {
    const s = this.states.get(`${org}/${name}`);
    if (!s) return;
    const app: AppInfo | undefined = this.d.apps.get(org, name);
    if (!app || (s.uid !== undefined && app.uid !== s.uid)) {
      const cause = gatewayError(404, `app "${name}" was deleted`);
      s.cancelAll(cause);
      if (s.inFlight === 0) this.states.delete(`${org}/${name}`);
      else s.uid = app?.uid;
    }
    s.forget(this.d.apps.endpoints(org, name));
    s.wake();
  }

  /**
   * Graceful stop: new requests get 503, running ones (streams) may finish until the deadline; then the rest are cut
   * with an error event, and pending usage is written.
   */
  async close(deadlineMs: number): Promise<void> {
    this.closing = true;
    this.consoleSessions.stop();
    if (this.running > 0)
      await Promise.race([
        new Promise<void>((r) => {
          this.idle = r;
        }),
        new Promise((r) => setTimeout(r, deadlineMs)),
      ]);
    const cause = new AppError("SHUTTING_DOWN", "the gateway is shutting down");
    for (const s of this.states.values()) s.cancelAll(cause);
    if (this.running > 0)
      await Promise.race([
        new Promise<void>((r) => {
          this.idle = r;
        }),
        new Promise((r) => setTimeout(r, 2000)),
      ]);
    this.flushEnded();
    await this.d.usage?.flush().catch((err: unknown) => this.d.logger.warn({ err: String(err) }, "usage flush failed"));
    await this.upstreams.close();
  }
}
