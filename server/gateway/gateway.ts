// The gateway: its parts wired together, and what it keeps per app while serving. A request goes down the steps:
// 1-dispatch → (pipeline.ts) 2-authenticate → 3-route → 4-forward → 5-account, each route's rules read from
// routes.ts. It reads apps, pods, keys and usage only through the interfaces of ports.ts, so the same code serves
// the cluster (kube/ watches) and a one-off local server (memory.ts). No Kubernetes API call is made per request.
import type { ServerResponse } from "node:http";
import { AppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import { Accounting } from "./5-account/accounting.ts";
import { AppState } from "./3-route/app-state.ts";
import { clientOf, type ClientOf } from "./1-dispatch/client.ts";
import { Authenticator } from "./2-authenticate/authenticate.ts";
import { ColdStart } from "./3-route/cold-start.ts";
import type { GatewayConfig } from "./config.ts";
import type { RequestContext } from "./context.ts";
import { dispatcher, systemDispatcher, type SystemPath } from "./1-dispatch/dispatch.ts";
import { gatewayError } from "./errors.ts";
import { serveApp, type PipelineDeps } from "./pipeline.ts";
import { createManagement } from "./management/management-api.ts";
import { GatewayMetrics } from "./metrics.ts";
import type { AppInfo, AppSource, KeyStore, LoadSink, UsageStore } from "./ports.ts";
import { Upstreams } from "./4-forward/proxy.ts";
import { requestIds } from "./1-dispatch/request-id.ts";
import type { AppAdmin } from "./management/app-admin.ts";
import { asAppRequest } from "./console/playground.ts";
import type { SessionStore } from "./console/session.ts";
import { consoleManagement } from "./console/wire.ts";
import { QueueService } from "./queue/service.ts";

export interface GatewayDeps {
  config: GatewayConfig;
  apps: AppSource;
  keys: KeyStore;
  usage?: UsageStore;
  /** Who hears about load (the operators' autoscaler); none: something else starts the apps' pods. */
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

export class Gateway implements PipelineDeps {
  readonly config: GatewayConfig;
  readonly apps: AppSource;
  readonly metrics: GatewayMetrics;
  readonly upstreams: Upstreams;
  readonly coldStart: ColdStart;
  readonly accounting: Accounting;
  readonly auth: Authenticator;
  /** Who a request's client is (config trustProxy). */
  readonly clientOf: ClientOf;
  readonly logger: Logger;
  readonly now: () => number;
  /** The request listener of the gateway's address, and of its metrics address. */
  readonly handle: (req: RequestContext["req"], res: ServerResponse) => void;
  readonly handleSystem: (req: RequestContext["req"], res: ServerResponse) => void;
  private readonly d: GatewayDeps;
  private readonly states = new Map<string, AppState>();
  private readonly consoleSessions: { start(): void; stop(): void };
  /** fal's queue API, when config.queue names a broker. */
  readonly queue: QueueService | undefined;
  private closing_ = false;
  private running = 0;
  private idle: (() => void) | undefined;

  constructor(d: GatewayDeps) {
    this.d = d;
    const c = (this.config = d.config);
    this.apps = d.apps;
    this.logger = d.logger;
    this.now = d.now ?? Date.now;
    this.metrics = new GatewayMetrics(() =>
      [...this.states.values()].map((s) => ({ org: s.org, app: s.name, inFlight: s.inFlight, held: s.held })),
    );
    this.upstreams = new Upstreams({
      connectionsPerPod: c.upstream.connectionsPerPod,
      headersTimeoutMs: c.upstream.headersTimeoutSeconds * 1000,
      idleTimeoutMs: c.upstream.idleTimeoutSeconds * 1000,
    });
    this.coldStart = new ColdStart({
      apps: d.apps,
      hold: c.hold,
      ...(d.load ? { load: d.load } : {}),
      metrics: this.metrics,
      logger: d.logger,
      upstreams: this.upstreams,
      now: this.now,
    });
    this.accounting = new Accounting({
      metrics: this.metrics,
      ...(d.usage ? { usage: d.usage } : {}),
      logger: d.logger,
      now: this.now,
    });
    this.clientOf = clientOf(c.trustProxy);
    this.auth = new Authenticator({ keys: d.keys, config: c, metrics: this.metrics, now: this.now });
    const consoleParts = consoleManagement({
      queue: c.queue !== undefined,
      requests: (org, app) => this.queue?.recent(org, app),
      config: c.console,
      ...(d.sessions ? { sessions: d.sessions } : {}),
      ...(d.appAdmin ? { admin: d.appAdmin } : {}),
      ...(d.consoleAssets ? { assetsDir: d.consoleAssets } : {}),
      apps: d.apps,
      keys: d.keys,
      checkHeader: (req) => this.auth.check(req),
      checkKey: (key) => this.auth.checkKey(key),
      clientOf: this.clientOf,
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
    const management = createManagement({
      ...consoleParts.deps,
      queue: c.queue !== undefined,
      usageDays: c.usage.retentionDays,
      apps: d.apps,
      keys: d.keys,
      ...(d.usage ? { usage: this.usageAfterFlush(d.usage) } : {}),
      limit: (key) => this.auth.acquireLimit(key),
      maxBodyBytes: c.maxBodyBytes,
      logger: d.logger,
      ...(d.publicUrl ? { publicUrl: d.publicUrl } : {}),
      now: this.now,
      onAuthFailure: (reason) => this.metrics.authFailures.inc({ reason }),
    });
    if (c.queue) {
      const q = new QueueService({
        config: c.queue,
        maxBodyBytes: c.maxBodyBytes,
        apps: d.apps,
        check: (req) => this.auth.check(req),
        acquireLimit: (key) => this.auth.acquireLimit(key),
        run: (req, res) => this.handle(req, res),
        registry: this.metrics.registry,
        logger: d.logger,
        now: this.now,
        ...(d.publicUrl ? { publicUrl: d.publicUrl } : {}),
      });
      this.queue = q;
      q.start().catch((err: unknown) => d.logger.error({ err: String(err) }, "the queue did not start"));
    }
    const queue = this.queue;
    const dispatch = {
      config: c,
      clientOf: this.clientOf,
      ...(queue ? { queue: queue.handle.bind(queue) } : {}),
      newRequestId: requestIds(),
      logger: d.logger,
      management,
      serveApp: (ctx: RequestContext) => this.serve(ctx),
      system: (path: SystemPath, res: ServerResponse) => this.system(path, res),
    };
    this.handle = dispatcher(dispatch);
    this.handleSystem = systemDispatcher(dispatch);
    d.apps.onChange((org, name) => {
      this.appChanged(org, name);
      this.queue?.appChanged(org, name);
    });
    // Held requests of apps at zero learn at once when this gateway can no longer wake them (or can again).
    d.load?.onWakeChange?.(() => {
      for (const s of this.states.values()) s.wake();
    });
  }

  get closing(): boolean {
    return this.closing_;
  }

  /** True when the caches have their first listing (and the gateway is not shutting down). */
  get ready(): boolean {
    return (
      !this.closing_ &&
      this.d.apps.synced &&
      this.d.keys.synced &&
      (this.d.usage?.synced ?? true) &&
      (this.d.sessions?.synced ?? true)
    );
  }

  state(org: string, name: string): AppState {
    const k = `${org}/${name}`;
    let s = this.states.get(k);
    if (!s) {
      s = new AppState(org, name, this.metrics.app(org, name));
      this.states.set(k, s);
    }
    return s;
  }

  /** Accounts for the requests that ended (a scrape or a usage read sees them all). */
  flushEnded(): void {
    this.accounting.flush();
  }

  /** In-flight requests per app (held ones included; a warming app counts at least 1), for the autoscaler. */
  loadSnapshot(): Array<{ namespace: string; name: string; inFlight: number }> {
    const now = this.now();
    const out: Array<{ namespace: string; name: string; inFlight: number }> = [];
    for (const s of this.states.values()) {
      // Queued requests waiting for the app are load too: a burst larger than the replicas scales them up.
      const n = Math.max(s.inFlight, s.warmUntil > now ? 1 : 0) + (this.queue?.waiting(s.org, s.name) ?? 0);
      if (n > 0) out.push({ namespace: s.org, name: s.name, inFlight: n });
    }
    return out;
  }

  private serve(ctx: RequestContext): Promise<void> {
    this.running++;
    return serveApp(this, ctx).finally(() => {
      if (--this.running === 0) this.idle?.();
    });
  }

  /** The usage store as the management API reads it: with the requests that ended just now. */
  private usageAfterFlush(usage: UsageStore): Pick<UsageStore, "query"> {
    return {
      query: (org, from, to) => {
        this.accounting.flush();
        return usage.query(org, from, to);
      },
    };
  }

  private async system(path: SystemPath, res: ServerResponse): Promise<void> {
    if (path === "/metrics") {
      this.accounting.flush();
      const text = await this.metrics.registry.metrics();
      res.writeHead(200, { "content-type": this.metrics.registry.contentType });
      res.end(text);
      return;
    }
    const ok = path === "/healthz" ? true : this.ready;
    const status = ok ? "ok" : this.closing_ ? "shutting down" : "syncing";
    const wake = this.d.load?.cannotWake;
    // Serving apps that run is what readiness is about; that apps at zero cannot be woken is said, not failed on.
    const body = JSON.stringify({
      status,
      ...(path === "/readyz" && this.d.load
        ? { scaleFromZero: wake === undefined ? "ok" : `unavailable: ${wake}` }
        : {}),
    });
    res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
    res.end(body);
  }

  /** An app or its pods changed: wake its held requests; a deleted (or re-created) app fails what it was doing. */
  private appChanged(org: string, name: string): void {
    const s = this.states.get(`${org}/${name}`);
    if (!s) return;
    const app: AppInfo | undefined = this.d.apps.get(org, name);
    if (!app || (s.uid !== undefined && app.uid !== s.uid)) {
      s.cancelAll(gatewayError(404, `app "${name}" was deleted`));
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
    this.closing_ = true;
    // The queue's workers take nothing more; the requests they run drain with the others.
    const queueClosed = this.queue?.close();
    this.consoleSessions.stop();
    const idle = (ms: number) =>
      this.running > 0
        ? Promise.race([
            new Promise<void>((r) => {
              this.idle = r;
            }),
            new Promise((r) => setTimeout(r, ms)),
          ])
        : undefined;
    await idle(deadlineMs);
    const cause = new AppError("SHUTTING_DOWN", "the gateway is shutting down");
    for (const s of this.states.values()) s.cancelAll(cause);
    await idle(2000);
    await queueClosed;
    this.accounting.flush();
    await this.d.usage?.flush().catch((err: unknown) => this.d.logger.warn({ err: String(err) }, "usage flush failed"));
    await this.upstreams.close();
  }
}
