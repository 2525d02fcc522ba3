// The workers: one BullMQ worker per app in each gateway replica, taking the app's queued requests within its
// capacity (ready replicas × concurrencyPerReplica, at least one replica's worth so an app at zero is woken, as a
// synchronous request wakes it) and running each through the gateway's own pipeline (exchange.ts). A replica that
// died under a request (502/503/504 from the pipeline) gets the request run again after retryDelayMs, up to
// maxRetries, unless it came with x-fal-no-retry. A gateway killed mid-request loses its lock: after stalledSeconds
// another replica (or the restarted one) runs the request again, or, with x-fal-no-retry, marks it failed.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Worker } from "bullmq";
import type { Logger } from "../../common/logger.ts";
import type { Broker, QueueJob } from "./broker.ts";
import { queueName } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import { CollectedResponse, runRequest } from "./exchange.ts";
import type { QueueMetrics } from "./metrics.ts";
import { falError, type JobData, type JobResult } from "./wire.ts";

export interface RunHost {
  /** The gateway's request listener: the request goes through auth, limits, hold, a pod and accounting. */
  run(req: IncomingMessage, res: ServerResponse): void;
  /** Ready replicas of an app now. */
  readyReplicas(org: string, app: string): number;
  logger: Logger;
  now: () => number;
}

/** The queue's own answer (not the app's): fal's error body, with its X-Fal-Error-Type. Pure. */
export function errorResult(
  status: number,
  detail: string,
  errorType: string,
  startedAt: number,
  now: number,
): JobResult {
  return {
    status,
    contentType: "application/json",
    body: Buffer.from(falError(detail, errorType)).toString("base64"),
    error: detail,
    errorType,
    startedAt,
    finishedAt: now,
  };
}

/** Statuses of the pipeline that say the app's replica died, refused or never answered: run again. */
const RETRIED = new Set([502, 503, 504]);

class Retry extends Error {}

/** A queued request's 401: its submitter's key was checked at submit; only a revocation or expiry since fails it. */
const KEY_GONE = "the API key that submitted this request was revoked or expired before it ran";

export class Runner {
  private readonly workers = new Map<string, Worker<JobData, JobResult>>();
  private readonly running = new Map<string, { res: CollectedResponse; cancelled: boolean }>();
  private closing = false;

  private readonly c: QueueConfig;
  private readonly broker: Broker;
  private readonly host: RunHost;
  private readonly metrics: QueueMetrics;
  /** Called with each finished request before the broker marks it done (webhooks are stored then). */
  private readonly finished: (job: QueueJob, r: JobResult) => Promise<void>;
  /** Called when a request starts or ends on this replica (status streams listen). */
  private readonly changed: (id: string) => void;

  constructor(d: {
    config: QueueConfig;
    broker: Broker;
    host: RunHost;
    metrics: QueueMetrics;
    finished: (job: QueueJob, r: JobResult) => Promise<void>;
    changed: (id: string) => void;
  }) {
    this.c = d.config;
    this.broker = d.broker;
    this.host = d.host;
    this.metrics = d.metrics;
    this.finished = d.finished;
    this.changed = d.changed;
  }

  /** Requests running on this replica, by app (`org/app`). */
  runningCount(): number {
    return this.running.size;
  }

  /** The apps (`org/app`) with a worker on this replica. */
  apps(): string[] {
    return [...this.workers.keys()];
  }

  capacity(org: string, app: string): number {
    return Math.max(1, this.host.readyReplicas(org, app)) * this.c.concurrencyPerReplica;
  }

  /** A worker for the app's queue on this replica (made once), with its capacity set. */
  ensure(org: string, app: string): void {
    const name = queueName(org, app);
    if (this.closing || this.workers.has(name)) return;
    const cap = this.capacity(org, app);
    const w = new Worker<JobData, JobResult>(name, (job) => this.process(job as QueueJob), {
      connection: this.broker.workers,
      prefix: this.c.prefix,
      concurrency: cap,
      lockDuration: this.c.stalledSeconds * 1000,
      stalledInterval: this.c.stalledSeconds * 1000,
      maxStalledCount: this.c.maxRetries + 1,
    });
    w.on("error", (err) => this.host.logger.warn({ err: String(err), queue: name }, "queue worker error"));
    w.on("failed", (job) => {
      if (job) void this.failedForGood(job as QueueJob);
    });
    this.workers.set(name, w);
    void this.broker
      .queue(org, app)
      .setGlobalConcurrency(cap)
      .catch(() => undefined);
  }

  /** The app's replicas changed: its capacity follows. */
  resize(org: string, app: string): void {
    const w = this.workers.get(queueName(org, app));
    if (!w) return;
    const cap = this.capacity(org, app);
    if (w.concurrency !== cap) {
      w.concurrency = cap;
      void this.broker
        .queue(org, app)
        .setGlobalConcurrency(cap)
        .catch(() => undefined);
    }
  }

  /** Stops a request running here (the pod's request is aborted at once). */
  cancel(queue: string, id: string): void {
    const r = this.running.get(`${queue} ${id}`);
    if (!r) return;
    r.cancelled = true;
    r.res.destroy();
  }

  private async process(job: QueueJob): Promise<JobResult> {
    const d = job.data;
    const id = job.id!;
    const startedAt = this.host.now();
    if (job.attemptsStarted <= 1) this.metrics.waitSeconds.observe((startedAt - d.submittedAt) / 1000);
    else this.metrics.retries.inc({ org: d.org, app: d.app });
    const fail = (status: number, detail: string, type: string, extra: Partial<JobResult> = {}) =>
      this.done(job, { ...errorResult(status, detail, type, startedAt, this.host.now()), ...extra });
    if (d.cancelled) return fail(400, "Request was cancelled", "request_cancelled");
    if (d.startBy !== undefined && startedAt > d.startBy)
      return fail(504, "the request did not start within its X-Fal-Request-Timeout", "request_timeout", {
        userTimeout: true,
      });
    if (d.noRetry && (job.attemptsStarted > 1 || job.stalledCounter > 0))
      return fail(
        503,
        "the gateway running the request stopped, and it came with x-fal-no-retry",
        "runner_disconnected",
      );
    const res = new CollectedResponse();
    const key = `${queueName(d.org, d.app)} ${id}`;
    const entry = { res, cancelled: false };
    this.running.set(key, entry);
    this.changed(id);
    try {
      const req = runRequest({
        org: d.org,
        app: d.app,
        rest: d.rest,
        query: d.query,
        method: d.method,
        ...(d.contentType ? { contentType: d.contentType } : {}),
        body: Buffer.from(d.body, "base64"),
        requestId: id,
        ...(d.key ? { key: d.key } : {}),
      });
      this.host.run(req, res.asServerResponse());
      const whole = await res.ended;
      if (entry.cancelled) return fail(400, "Request was cancelled", "request_cancelled");
      const status = whole ? res.statusCode : 502;
      const lastTry = d.noRetry || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (RETRIED.has(status) && !lastTry && !this.closing)
        throw new Retry(`the app answered ${status}; running again`);
      const body = whole ? res.body() : Buffer.from(falError("the app's answer broke off", "runner_disconnected"));
      const failed = status >= 400;
      const text = failed ? body.toString("utf8").slice(0, 2000) : "";
      return this.done(job, {
        status,
        contentType: whole ? (res.getHeader("content-type") ?? "application/octet-stream") : "application/json",
        body: body.toString("base64"),
        ...(failed
          ? { error: status === 401 && d.key ? KEY_GONE : errorText(text, status), errorType: errorTypeOf(status) }
          : {}),
        startedAt,
        finishedAt: this.host.now(),
      });
    } finally {
      this.running.delete(key);
      this.changed(id);
    }
  }

  private async done(job: QueueJob, r: JobResult): Promise<JobResult> {
    await this.finished(job, r);
    this.metrics.finished.inc({ org: job.data.org, app: job.data.app, outcome: r.error ? "error" : "ok" });
    return r;
  }

  /** A request BullMQ gave up on (stalled too often, or an error of the worker itself): its webhook still goes. */
  private async failedForGood(job: QueueJob): Promise<void> {
    if (job.failedReason?.startsWith("the app answered") || job.attemptsMade < (job.opts.attempts ?? 1)) {
      if (!job.failedReason?.includes("stalled")) return; // BullMQ runs it again
    }
    const now = this.host.now();
    const r = errorResult(500, job.failedReason || "the request failed", "internal_error", job.processedOn ?? now, now);
    await this.finished(job, r).catch(() => undefined);
    this.changed(job.id!);
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.workers.values()].map((w) => w.close().catch(() => undefined)));
  }
}

/** The error a failed answer carries: its OpenAI/Ollama/fal message when it has one, else its status. Pure. */
export function errorText(body: string, status: number): string {
  try {
    const j = JSON.parse(body) as { error?: { message?: string } | string; detail?: unknown };
    if (typeof j.error === "string") return j.error;
    if (j.error && typeof j.error.message === "string") return j.error.message;
    if (typeof j.detail === "string") return j.detail;
  } catch {
    // not JSON: the status says it
  }
  return `the app answered ${status}`;
}

/** fal's error types for a failed run, by status. Pure. */
export function errorTypeOf(status: number): string {
  if (status === 504) return "request_timeout";
  if (status === 502 || status === 503) return "runner_disconnected";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "internal_error";
  return "client_error";
}
