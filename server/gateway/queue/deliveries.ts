// Webhook deliveries as broker jobs: stored when a request finishes (before the broker marks it done, with the
// request id as the job id, so a request run twice is delivered once), sent by a worker in every gateway replica,
// retried with doubling waits (webhooks.attempts, webhooks.backoffMs), counted when given up.
import { Queue, Worker } from "bullmq";
import type { Logger } from "../../common/logger.ts";
import type { Broker } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import type { QueueMetrics } from "./metrics.ts";
import { webhookBody, WebhookSender, type WebhookSigner } from "./webhooks.ts";
import type { JobResult } from "./wire.ts";

interface Delivery {
  url: string;
  requestId: string;
  /** fal's user_id of the signature: the org that owns the request. */
  userId: string;
  body: string;
}

const NAME = "_webhooks";

type Schedule = Pick<QueueConfig["webhooks"], "attempts" | "backoffMs">;

/** BullMQ's backoff of a delivery: `backoffMs` before the second attempt, doubling after each. Pure. */
export const deliveryBackoff = (w: Schedule) => ({ type: "exponential", delay: w.backoffMs }) as const;

/** When each attempt of a delivery starts, in ms after the first (BullMQ's exponential backoff: the wait after
 * attempt n is backoffMs × 2^(n-1)); the defaults (10 attempts from 15 s) span 2 h 7 min. Pure. */
export function deliveryAttemptTimes(w: Schedule): number[] {
  const times = [0];
  for (let n = 1; n < w.attempts; n++) times.push(times[n - 1]! + Math.round(2 ** (n - 1) * w.backoffMs));
  return times;
}

export class Deliveries {
  private readonly queue: Queue<Delivery>;
  private worker: Worker<Delivery> | undefined;
  private readonly sender: WebhookSender;

  private readonly c: QueueConfig;
  private readonly broker: Broker;
  private readonly metrics: QueueMetrics;
  private readonly logger: Logger;
  private readonly now: () => number;

  constructor(d: { config: QueueConfig; broker: Broker; metrics: QueueMetrics; logger: Logger; now: () => number }) {
    this.c = d.config;
    this.broker = d.broker;
    this.metrics = d.metrics;
    this.logger = d.logger;
    this.now = d.now;
    const c = d.config,
      broker = d.broker;
    this.queue = new Queue<Delivery>(NAME, { connection: broker.client, prefix: c.prefix });
    this.queue.on("error", () => undefined);
    this.sender = new WebhookSender({
      allowPrivate: c.webhooks.allowPrivateAddresses,
      timeoutMs: c.webhooks.timeoutMs,
    });
  }

  /** Stores the delivery of a finished request (once per request id). */
  async add(url: string, requestId: string, userId: string, r: JobResult): Promise<void> {
    const w = this.c.webhooks;
    await this.broker.timely(
      this.queue.add(
        "deliver",
        { url, requestId, userId, body: webhookBody(requestId, r) },
        {
          jobId: requestId,
          attempts: w.attempts,
          backoff: deliveryBackoff(w),
          removeOnComplete: { age: this.c.retentionSeconds },
          removeOnFail: { age: this.c.retentionSeconds },
        },
      ),
    );
  }

  /** Starts sending (once the signing key is known). */
  start(signer: WebhookSigner): void {
    const allow = this.c.webhooks.allowPrivateAddresses;
    this.worker = new Worker<Delivery>(
      NAME,
      async (job) => {
        const d = job.data;
        try {
          await this.sender.send(d.url, signer.headers(d.requestId, d.userId, d.body, this.now()), d.body, allow);
          this.metrics.webhookDeliveries.inc({ outcome: "ok" });
        } catch (err) {
          const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
          this.metrics.webhookDeliveries.inc({ outcome: last ? "failed" : "retry" });
          if (last) {
            this.metrics.webhookFailures.inc();
            this.logger.warn({ requestId: d.requestId, err: String(err) }, "webhook given up after every attempt");
          } else this.logger.info({ requestId: d.requestId, err: String(err) }, "webhook delivery failed; will retry");
          throw err;
        }
      },
      { connection: this.broker.workers, prefix: this.c.prefix, concurrency: 32 },
    );
    this.worker.on("error", (err) => this.logger.warn({ err: String(err) }, "webhook worker error"));
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await this.queue.close().catch(() => undefined);
    await this.sender.close().catch(() => undefined);
  }
}
