// fal's queue API on the gateway, under /_queue (an app's queue URL is <gateway>/_queue/<org>/<app>): submit, status
// (and its SSE stream), result and cancel, with the app's auth mode and keys, and the JWKS of webhook signatures.
// A submission is acknowledged only once the broker holds it; everything after is read from the broker, so any
// gateway replica answers for any request. See docs/gateway.md (Queue) and wire.ts for the shapes.
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { Logger } from "../../common/logger.ts";
import { decideAccess, type KeyCheck, type VerifiedKey } from "../2-authenticate/authorization.ts";
import { readRequestBody } from "../3-route/request-body.ts";
import { limitRefusal, type LimitResult } from "../2-authenticate/limiter.ts";
import type { AppSource } from "../ports.ts";
import { route } from "../1-dispatch/target.ts";
import { Broker, BrokerUnavailable, queueName, type QueueJob } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import { Deliveries } from "./deliveries.ts";
import { QueueMetrics } from "./metrics.ts";
import { errorResult, Runner } from "./runner.ts";
import { requestRow, statusOf, type RequestRow, type StatusView } from "./status.ts";
import { webhookUrlProblem, WebhookSigner } from "./webhooks.ts";
import {
  falError,
  QUEUE_PREFIX,
  queuePriority,
  queueRoute,
  requestUrls,
  splitQuery,
  startTimeoutMs,
  type JobData,
  type JobResult,
} from "./wire.ts";

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

type Send = (status: number, body: string | Buffer, headers?: Record<string, string>) => void;

export class QueueService {
  private readonly d: QueueDeps;
  private readonly broker: Broker;
  private readonly runner: Runner;
  private readonly deliveries: Deliveries;
  private readonly metrics: QueueMetrics;
  private readonly changes = new EventEmitter();
  private readonly waitingCounts = new Map<string, number>();
  /** Submissions this replica stored since the last count. */
  private readonly submittedSince = new Map<string, number>();
  private signer: WebhookSigner | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(d: QueueDeps) {
    this.d = d;
    const c = d.config;
    this.changes.setMaxListeners(0);
    this.broker = new Broker(c, (queue, id) => this.runner.cancel(queue, id));
    this.metrics = new QueueMetrics(d.registry, {
      waiting: async () => [...this.waitingCounts].map(([k, n]) => ({ ...splitName(k), n })),
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
      changed: (id) => this.changes.emit(id),
    });
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
      const { org, app } = splitName(name);
      if (this.d.apps.get(org, app)) this.runner.ensure(org, app);
    }
    this.timer = setInterval(() => void this.refreshWaiting(), 1000).unref();
    this.d.logger.info({ broker: redacted(this.d.config.redisUrl) }, "queue ready");
  }

  /** Requests waiting for an app (refreshed each second), for the autoscaler's load. */
  waiting(org: string, app: string): number {
    return this.waitingCounts.get(queueName(org, app)) ?? 0;
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
      return this.submit(req, r.org, r.app, r.rest, query, decision.key, base, send);
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
      if (r.stream) return this.stream(req, res, job, urls, logs);
      const v = await this.view(job, logs);
      return send(v.http, JSON.stringify({ ...v.body, ...urls }), headers);
    }
    if (r.kind === "cancel") return this.cancel(job, send, headers);
    return this.result(job, send, headers);
  }

  private async submit(
    req: IncomingMessage,
    org: string,
    app: string,
    rest: string,
    rawQuery: string,
    key: VerifiedKey | undefined,
    base: string,
    send: Send,
  ): Promise<void> {
    const count = (outcome: string) => this.metrics.submitted.inc({ org, app, outcome });
    const { query, webhook } = splitQuery(rawQuery);
    if (webhook !== undefined) {
      const problem = webhookUrlProblem(webhook, this.d.config.webhooks.allowPrivateAddresses);
      if (problem) {
        req.resume();
        count("bad_request");
        return send(400, falError(problem, "invalid_webhook"), { "x-fal-error-type": "invalid_webhook" });
      }
    }
    if (key) {
      const l = this.d.acquireLimit(key);
      if (!l.ok) {
        req.resume();
        count("rate_limited");
        const refusal = limitRefusal(l);
        return send(429, falError(refusal.message, "rate_limited"), refusal.headers);
      }
      l.release();
    }
    const body = await readRequestBody(req, this.d.maxBodyBytes);
    if (body === "aborted") return;
    if (body === "too-large") {
      count("too_large");
      return send(413, falError(`request body is larger than ${this.d.maxBodyBytes} bytes`, "payload_too_large"), {
        connection: "close",
      });
    }
    const c = this.d.config;
    // The count read each second plus what this replica stored since: no broker round trip per submission, except
    // near the limit, where the exact count decides.
    const name = queueName(org, app);
    if (
      this.waiting(org, app) + (this.submittedSince.get(name) ?? 0) >= c.maxQueuedPerApp &&
      (await this.exactWaiting(org, app)) >= c.maxQueuedPerApp
    ) {
      count("full");
      return send(429, falError(`the app's queue is full (${c.maxQueuedPerApp} waiting)`, "queue_full"), {
        "retry-after": "5",
        "x-fal-error-type": "queue_full",
      });
    }
    const priority = queuePriority(headerOf(req, "x-fal-queue-priority"));
    if (priority === undefined) {
      count("bad_request");
      return send(400, falError("X-Fal-Queue-Priority must be normal or low", "invalid_priority"), {
        "x-fal-error-type": "invalid_priority",
      });
    }
    const id = randomUUID();
    const now = this.d.now();
    const timeout = startTimeoutMs(headerOf(req, "x-fal-request-timeout"));
    const data: JobData = {
      org,
      app,
      rest,
      query,
      method: req.method ?? "POST",
      ...(req.headers["content-type"] ? { contentType: req.headers["content-type"] } : {}),
      body: (body ?? Buffer.alloc(0)).toString("base64"),
      ...(key ? { key: { id: key.id, org: key.org, scope: key.scope } } : {}),
      owner: key?.org ?? org,
      ...(webhook !== undefined ? { webhook } : {}),
      ...(timeout !== undefined ? { startBy: now + timeout } : {}),
      noRetry: /^(1|true|yes)$/i.test(headerOf(req, "x-fal-no-retry") ?? ""),
      ...(priority === "low" ? { priority } : {}),
      submittedAt: now,
    };
    await this.broker.add(id, data);
    this.submittedSince.set(name, (this.submittedSince.get(name) ?? 0) + 1);
    if (!this.runner.apps().includes(name)) {
      this.runner.ensure(org, app);
      await this.refreshWaiting();
    }
    count("accepted");
    const position = this.waiting(org, app);
    send(
      200,
      JSON.stringify({
        status: "IN_QUEUE",
        ...requestUrls(base, org, app, id),
        gateway_request_id: id,
        queue_position: position,
      }),
      {
        "x-fal-request-id": id,
      },
    );
  }

  private async view(job: QueueJob, logs: boolean): Promise<StatusView> {
    const state = await this.broker.timely(job.getState());
    const waiting = state === "waiting" || state === "delayed" || state === "prioritized";
    const position = waiting && !job.data.cancelled ? await this.broker.position(job) : 0;
    return statusOf(job, state, position, logs, this.d.config.maxRetries);
  }

  /** The status as SSE: each change, keep-alives meanwhile, closed after COMPLETED. */
  private async stream(
    req: IncomingMessage,
    res: ServerResponse,
    job: QueueJob,
    urls: object,
    logs: boolean,
  ): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-fal-request-id": job.id!,
    });
    let last = "";
    let closed = false;
    res.once("close", () => (closed = true));
    let lastWrite = this.d.now();
    const keepAliveMs = this.d.config.keepAliveSeconds * 1000;
    for (;;) {
      // Armed before the read: a start or end on this replica between the read and the wait is not missed.
      const next = this.changed(job.id!, Math.min(500, keepAliveMs));
      const fresh = await this.broker.find(job.data.org, job.data.app, job.id!);
      const v = fresh ? await this.view(fresh, logs) : undefined;
      const text = v ? JSON.stringify({ ...v.body, ...urls }) : "";
      if (v && text !== last) {
        res.write(`data: ${text}\n\n`);
        last = text;
        lastWrite = this.d.now();
      }
      if (!v || v.body.status === "COMPLETED" || closed) {
        next.cancel();
        break;
      }
      await next.done;
      if (closed) break;
      if (this.d.now() - lastWrite >= keepAliveMs) {
        res.write(": keep-alive\n\n");
        lastWrite = this.d.now();
      }
    }
    if (!req.destroyed) res.end();
  }

  /** Settles when this replica starts or ends the request, or after ms (other replicas are polled). */
  private changed(id: string, ms: number): { done: Promise<void>; cancel(): void } {
    let settle: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      settle = () => {
        clearTimeout(t);
        this.changes.off(id, settle);
        resolve();
      };
    });
    const t = setTimeout(settle, ms);
    this.changes.on(id, settle);
    return { done, cancel: settle };
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

  private async exactWaiting(org: string, app: string): Promise<number> {
    const name = queueName(org, app);
    const n = await this.broker.waiting(org, app);
    this.waitingCounts.set(name, n);
    this.submittedSince.set(name, 0);
    return n;
  }

  private async refreshWaiting(): Promise<void> {
    for (const name of this.runner.apps()) {
      const { org, app } = splitName(name);
      const before = this.submittedSince.get(name) ?? 0;
      const n = await this.broker.waiting(org, app).catch(() => undefined);
      if (n === undefined) continue;
      this.waitingCounts.set(name, n);
      this.submittedSince.set(name, (this.submittedSince.get(name) ?? 0) - before);
    }
  }
}

const splitName = (name: string): { org: string; app: string } => {
  const i = name.indexOf("/");
  return { org: name.slice(0, i), app: name.slice(i + 1) };
};

const headerOf = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const redacted = (url: string): string => url.replace(/\/\/[^@/]*@/, "//***@");
