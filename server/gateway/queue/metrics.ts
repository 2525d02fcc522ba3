// The queue's Prometheus metrics, on the gateway's registry: waiting requests per app (read from the broker when
// scraped), requests running on this replica, waits before a start, retries, finished requests and webhook failures.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

const WAIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

export class QueueMetrics {
  readonly submitted: Counter<"org" | "app" | "outcome">;
  readonly finished: Counter<"org" | "app" | "outcome">;
  readonly waitSeconds: Histogram;
  readonly retries: Counter<"org" | "app">;
  readonly webhookDeliveries: Counter<"outcome">;
  readonly webhookFailures: Counter;

  constructor(
    registry: Registry,
    read: { waiting(): Promise<Array<{ org: string; app: string; n: number }>>; running(): number },
  ) {
    const registers = [registry];
    this.submitted = new Counter({
      name: "gantry_queue_submissions_total",
      help: "Queue submissions by outcome (accepted, full, too_large, broker_down, bad_request, denied).",
      labelNames: ["org", "app", "outcome"],
      registers,
    });
    this.finished = new Counter({
      name: "gantry_queue_finished_total",
      help: "Queued requests finished on this replica, ok or error.",
      labelNames: ["org", "app", "outcome"],
      registers,
    });
    this.waitSeconds = new Histogram({
      name: "gantry_queue_wait_seconds",
      help: "Time from submission to the first start of a queued request.",
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.retries = new Counter({
      name: "gantry_queue_retries_total",
      help: "Queued requests run again (their replica or gateway died, or the app gave no answer).",
      labelNames: ["org", "app"],
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: "gantry_queue_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome (ok, retry, failed: given up after every attempt).",
      labelNames: ["outcome"],
      registers,
    });
    this.webhookFailures = new Counter({
      name: "gantry_queue_webhook_failures_total",
      help: "Webhooks given up after every attempt.",
      registers,
    });
    new Gauge({
      name: "gantry_queue_waiting",
      help: "Requests waiting in each app's queue (all replicas), read from the broker.",
      labelNames: ["org", "app"],
      registers,
      async collect() {
        this.reset();
        for (const w of await read.waiting().catch(() => [])) this.set({ org: w.org, app: w.app }, w.n);
      },
    });
    new Gauge({
      name: "gantry_queue_in_progress",
      help: "Queued requests running on this replica.",
      registers,
      collect() {
        this.set(read.running());
      },
    });
  }
}
