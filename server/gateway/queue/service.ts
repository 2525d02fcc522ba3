// fal's queue API on the gateway, under /_queue (an app's queue URL is <gateway>/_queue/<org>/<app>): submit, status
// (and its SSE stream), result and cancel, with the app's auth mode and keys, and the JWKS of webhook signatures.
// A submission is acknowledged only once the broker holds it; everything after is read from the broker, so any
// gateway replica answers for any request. See docs/gateway.md (Queue) and wire.ts for the shapes. Here: the routes,
// access, cancel and result, and the parts' lifecycle; submission.ts checks and stores a submission, status-feed.ts
// answers status, runner.ts runs requests, deliveries.ts sends webhooks, waiting-counts.ts counts waiting requests.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { Logger } from "../../common/logger.ts";
import { decideAccess, type KeyCheck } from "../2-authenticate/authorization.ts";
import type { LimitResult } from "../2-authenticate/limiter.ts";
import type { AppSource } from "../ports.ts";
import { route } from "../1-dispatch/target.ts";
import { Broker, BrokerUnavailable, queueName, splitQueueName, type QueueJob } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import { Deliveries } from "./deliveries.ts";
import { QueueMetrics } from "./metrics.ts";
import { errorResult, Runner } from "./runner.ts";
import { requestRow, type RequestRow } from "./status.ts";
import { StatusFeed } from "./status-feed.ts";
import { submit, type Send, type SubmitDeps } from "./submission.ts";
import { WaitingCounts } from "./waiting-counts.ts";
import { WebhookSigner } from "./webhooks.ts";
import { falError, QUEUE_PREFIX, queueRoute, requestUrls, type JobResult } from "./wire.ts";

export interface QueueDeps {
  config: QueueConfig;
  maxBodyBytes: number;
  apps: AppSource;
  /** The request's key, checked (cached) against the key store. */
  check(req: IncomingMessage): KeyCheck;
  acquireLimit(key: { id: string; org: string }): LimitResult;
  /** The gateway's request listener (runs a queued request through the app pipeline). */
  run(req: IncomingMessage, res: ServerResponse): void;
  registry: Registry;
  logger: Logger;
  now: () => number;
  /** The gateway's public base URL; the request's Host otherwise. */
  publicUrl?: string;
}

export class QueueService {
  private readonly d: QueueDeps;
  private readonly broker: Broker;
  private readonly runner: Runner;
  private readonly deliveries: Deliveries;
  private readonly metrics: QueueMetrics;
  private readonly status: StatusFeed;
  private readonly waitingCounts: WaitingCounts;
  private readonly submitDeps: SubmitDeps;
  private signer: WebhookSigner | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(d: QueueDeps) {
    this.d = d;
    const c = d.config;
    this.broker = new Broker(c, (queue, id) => this.runner.cancel(queue, id));
    this.waitingCounts = new WaitingCounts(this.broker);
    this.status = new StatusFeed({ broker: this.broker, config: c, now: d.now });
    this.metrics = new QueueMetrics(d.registry, {
      waiting: async () => this.waitingCounts.all(),
      running: () => this.runner.runningCount(),
    });
    this.deliveries = new Deliveries({
      config: c,
      broker: this.broker,
      metrics: this.metrics,
      logger: d.logger,
      now: d.now,
    });
    this.runner = new Runner({
      config: c,
      broker: this.broker,
      host: {
        run: d.run,
        readyReplicas: (org, app) => d.apps.endpoints(org, app).filter((e) => e.ready).length,
        logger: d.logger,
        now: d.now,
      },
      metrics: this.metrics,
      finished: (job, r) => this.finished(job, r),
      changed: (id) => this.status.changed(id),
    });
    this.submitDeps = {
      config: c,
      maxBodyBytes: d.maxBodyBytes,
      acquireLimit: (key) => d.acquireLimit(key),
      broker: this.broker,
      metrics: this.metrics,
      waiting: this.waitingCounts,
      stored: async (org, app) => {
        if (this.runner.apps().includes(queueName(org, app))) return;
        this.runner.ensure(org, app);
        await this.refreshWaiting();
      },
      now: d.now,
    };
  }

  /** Connects to the broker, loads the signing key and starts the workers of every app that has a queue. */
  start(): Promise<void> {
    return (this.started ??= this.startOnce());
  }

  private started: Promise<void> | undefined;

  private async startOnce(): Promise<void> {
    await this.broker.ready();
    this.signer = await WebhookSigner.load(this.d.config.webhooks.signingKeyFile, (pem) =>
      this.broker.sharedSigningKey(pem),
    );
    this.deliveries.start(this.signer);
    for (const name of await this.broker.apps()) {
      const { org, app } = splitQueueName(name);
      if (this.d.apps.get(org, app)) this.runner.ensure(org, app);
    }
    this.timer = setInterval(() => void this.refreshWaiting(), 1000).unref();
    this.d.logger.info({ broker: redacted(this.d.config.redisUrl) }, "queue ready");
  }

  /** Requests waiting for an app (refreshed each second), for the autoscaler's load. */
  waiting(org: string, app: string): number {
    return this.waitingCounts.get(org, app);
  }

  /** An app's latest requests (running, waiting, finished: up to `limit` of each), newest first, for the console. */
  async recent(org: string, app: string, limit = 50): Promise<RequestRow[]> {
    const q = this.broker.queue(org, app);
    const states = ["active", "waiting", "delayed", "completed", "failed"] as const;
    const lists = await this.broker.timely(Promise.all(states.map((s) => q.getJobs([s], 0, limit - 1))));
    const rows = lists.flatMap((jobs, i) => jobs.filter(Boolean).map((j) => requestRow(j, states[i]!)));
    return rows.sort((a, b) => b.submittedAt.localeCompare(a.submittedAt)).slice(0, limit * 2);
  }

  appChanged(org: string, app: string): void {
    this.runner.resize(org, app);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.runner.close();
    await this.deliveries.close();
    await this.broker.close();
  }

  /** Serves a request whose path is under /_queue (`path` is what follows it). */
  handle(req: IncomingMessage, res: ServerResponse, path: string, query: string, requestId: string): void {
    const send: Send = (status, body, headers = {}) => {
      if (res.headersSent) return void res.end();
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "x-request-id": requestId,
        ...headers,
      });
      res.end(body);
    };
    this.serve(req, res, path, query, send).catch((err: unknown) => {
      if (err instanceof BrokerUnavailable) {
        this.d.logger.warn({ err: err.message, requestId }, "queue broker unavailable");
        send(503, falError(err.message, "broker_unavailable"), {
          "retry-after": "1",
          "x-fal-error-type": "broker_unavailable",
        });
      } else {
        this.d.logger.error({ err: String(err), requestId }, "queue request failed");
        send(500, falError("internal error", "internal_error"), { "x-fal-error-type": "internal_error" });
      }
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse, path: string, query: string, send: Send) {
    const r = queueRoute(req.method ?? "GET", path);
    if (r.kind === "error") {
      if (req.method !== "GET" && req.method !== "HEAD") req.resume();
      return send(r.status, falError(r.message), r.allow ? { allow: r.allow } : {});
    }
    if (r.kind === "jwks") {
      if (!this.signer) return send(503, falError("the queue is starting"), { "retry-after": "1" });
      return send(200, this.signer.jwks, { "cache-control": "public, max-age=300" });
    }
    const app = this.d.apps.get(r.org, r.app);
    if (!app) {
      req.resume();
      return send(404, falError(`no app "${r.app}" in org "${r.org}"`, "app_not_found"));
    }
    const decision = decideAccess(app.auth, r.org, this.d.check(req));
    if (!decision.allow) {
      req.resume();
      const h: Record<string, string> = decision.status === 401 ? { "www-authenticate": 'Key realm="gantry"' } : {};
      return send(decision.status, falError(decision.message, "unauthorized"), h);
    }
    const base = `${this.d.publicUrl ?? `http://${req.headers.host ?? "localhost"}`}${QUEUE_PREFIX}`;
    if (r.kind === "submit") {
      // Only what the app serves and the route table lets wait in a queue is queued; the rest is refused now.
      const sync = route(req.method ?? "POST", `/${r.org}/${r.app}${r.rest}`);
      if (sync.kind !== "app" || !sync.api.queueable) {
        req.resume();
        if (sync.kind === "error")
          return send(sync.status, falError(sync.message), sync.allow ? { allow: sync.allow } : {});
        return send(405, falError(`${req.method ?? "POST"} ${r.rest} cannot be queued`));
      }
      const submission = { org: r.org, app: r.app, rest: r.rest, rawQuery: query, key: decision.key, base };
      return submit(this.submitDeps, req, submission, send);
    }
    const job = await this.broker.find(r.org, r.app, r.id);
    // Another org's request is as unknown as a made-up id: its status is never shown.
    if (!job || (job.data.key !== undefined && decision.key?.org !== job.data.owner)) {
      const body =
        r.kind === "cancel"
          ? JSON.stringify({ status: "NOT_FOUND", detail: "Request not found" })
          : falError("Request not found", "request_not_found");
      return send(404, body, { "x-fal-request-id": r.id });
    }
    const urls = requestUrls(base, r.org, r.app, r.id);
    const headers = { "x-fal-request-id": r.id };
    if (r.kind === "status") {
      const logs = /(?:^|[?&])logs=(?:1|true)(?:&|$)/i.test(query);
      if (r.stream) return this.status.stream(req, res, job, urls, logs);
      const v = await this.status.view(job, logs);
      return send(v.http, JSON.stringify({ ...v.body, ...urls }), headers);
    }
    if (r.kind === "cancel") return this.cancel(job, send, headers);
    return this.result(job, send, headers);
  }

  private async cancel(job: QueueJob, send: Send, headers: Record<string, string>): Promise<void> {
    const state = await this.broker.timely(job.getState());
    if (state === "completed" || state === "failed")
      return send(400, JSON.stringify({ status: "ALREADY_COMPLETED" }), headers);
    await this.broker.timely(job.updateData({ ...job.data, cancelled: true }));
    await this.broker.publishCancel(queueName(job.data.org, job.data.app), job.id!);
    send(202, JSON.stringify({ status: "CANCELLATION_REQUESTED" }), headers);
  }

  private async result(job: QueueJob, send: Send, headers: Record<string, string>): Promise<void> {
    const state = await this.broker.timely(job.getState());
    const now = this.d.now();
    const r: JobResult | undefined =
      state === "completed"
        ? job.returnvalue
        : state === "failed"
          ? errorResult(500, job.failedReason || "the request failed", "internal_error", now, now)
          : job.data.cancelled
            ? errorResult(400, "Request was cancelled", "request_cancelled", now, now)
            : undefined;
    if (!r) return send(400, falError("the request is still in progress", "request_in_progress"), headers);
    const h: Record<string, string> = { ...headers, "content-type": r.contentType };
    if (r.errorType) h["x-fal-error-type"] = r.errorType;
    if (r.userTimeout) h["x-fal-request-timeout-type"] = "user";
    send(r.status, Buffer.from(r.body, "base64"), h);
  }

  private async finished(job: QueueJob, r: JobResult): Promise<void> {
    if (job.data.webhook) await this.deliveries.add(job.data.webhook, job.id!, job.data.owner, r);
  }

  private refreshWaiting(): Promise<void> {
    return this.waitingCounts.refresh(this.runner.apps());
  }
}

const redacted = (url: string): string => url.replace(/\/\/[^@/]*@/, "//***@");
