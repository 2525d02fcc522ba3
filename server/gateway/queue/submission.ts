// A submission to an app's queue (POST /_queue/<org>/<app>/<path>): its webhook URL (the SSRF guard), the key's
// limits, the body (within the gateway's limit), the queue's limit and its priority are checked, in that order; the
// request is acknowledged (IN_QUEUE, with its URLs and place) only once the broker holds it.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { VerifiedKey } from "../2-authenticate/authorization.ts";
import { limitRefusal, type LimitResult } from "../2-authenticate/limiter.ts";
import { readRequestBody } from "../3-route/request-body.ts";
import type { Broker } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import type { QueueMetrics } from "./metrics.ts";
import type { WaitingCounts } from "./waiting-counts.ts";
import { webhookUrlProblem } from "./webhooks.ts";
import { falError, queuePriority, requestUrls, splitQuery, startTimeoutMs, type JobData } from "./wire.ts";

/** Answers a queue request: a status, a JSON body and headers. */
export type Send = (status: number, body: string | Buffer, headers?: Record<string, string>) => void;

export interface SubmitDeps {
  config: Pick<QueueConfig, "maxQueuedPerApp" | "webhooks">;
  maxBodyBytes: number;
  acquireLimit(key: { id: string; org: string }): LimitResult;
  broker: Pick<Broker, "add">;
  metrics: Pick<QueueMetrics, "submitted">;
  waiting: WaitingCounts;
  /** The request was stored: the app's queue gets its workers here if it has none yet. */
  stored(org: string, app: string): Promise<void>;
  now: () => number;
}

/** What is submitted: to which app and path, with which query, by which key (none for a public app). */
export interface Submission {
  org: string;
  app: string;
  rest: string;
  rawQuery: string;
  key: VerifiedKey | undefined;
  /** The queue's base URL, for the request's status, result and cancel URLs. */
  base: string;
}

export async function submit(d: SubmitDeps, req: IncomingMessage, s: Submission, send: Send): Promise<void> {
  const { org, app, key } = s;
  const count = (outcome: string) => d.metrics.submitted.inc({ org, app, outcome });
  const { query, webhook } = splitQuery(s.rawQuery);
  if (webhook !== undefined) {
    const problem = webhookUrlProblem(webhook, d.config.webhooks.allowPrivateAddresses);
    if (problem) {
      req.resume();
      count("bad_request");
      return send(400, falError(problem, "invalid_webhook"), { "x-fal-error-type": "invalid_webhook" });
    }
  }
  if (key) {
    const l = d.acquireLimit(key);
    if (!l.ok) {
      req.resume();
      count("rate_limited");
      const refusal = limitRefusal(l);
      return send(429, falError(refusal.message, "rate_limited"), refusal.headers);
    }
    l.release();
  }
  const body = await readRequestBody(req, d.maxBodyBytes);
  if (body === "aborted") return;
  if (body === "too-large") {
    count("too_large");
    return send(413, falError(`request body is larger than ${d.maxBodyBytes} bytes`, "payload_too_large"), {
      connection: "close",
    });
  }
  const max = d.config.maxQueuedPerApp;
  if (await d.waiting.atLeast(org, app, max)) {
    count("full");
    return send(429, falError(`the app's queue is full (${max} waiting)`, "queue_full"), {
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
  const now = d.now();
  const timeout = startTimeoutMs(headerOf(req, "x-fal-request-timeout"));
  const data: JobData = {
    org,
    app,
    rest: s.rest,
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
  await d.broker.add(id, data);
  d.waiting.submitted(org, app);
  await d.stored(org, app);
  count("accepted");
  const position = d.waiting.get(org, app);
  send(
    200,
    JSON.stringify({
      status: "IN_QUEUE",
      ...requestUrls(s.base, org, app, id),
      gateway_request_id: id,
      queue_position: position,
    }),
    { "x-fal-request-id": id },
  );
}

const headerOf = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};
