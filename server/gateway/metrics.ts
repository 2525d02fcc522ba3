// The gateway's Prometheus metrics (one registry per gateway). In-flight and held requests are read from the
// gateway's own counters when scraped, so the request path does not update gauges.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface AppCounts {
  org: string;
  app: string;
  inFlight: number;
  held: number;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<"org" | "app" | "code">;
  readonly duration: Histogram<"org" | "app">;
  readonly ttfb: Histogram<"org" | "app">;
  readonly coldStart: Histogram<"org" | "app">;
  readonly authFailures: Counter<"reason">;
  readonly rateLimited: Counter<"org" | "limit">;
  readonly usageRequests: Counter<"org" | "app" | "key_id">;
  readonly usageTokens: Counter<"org" | "app" | "key_id" | "type">;
  readonly upstreamRetries: Counter<"org" | "app">;
  readonly usageWrites: Counter<"result">;
  readonly loadReports: Counter<"result">;

  constructor(counts: () => AppCounts[] = () => []) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: "gantry_gateway_" });
    this.requests = new Counter({
      name: "gantry_gateway_requests_total",
      help: "Requests to apps by org, app and status code",
      labelNames: ["org", "app", "code"],
      registers,
    });
    this.duration = new Histogram({
      name: "gantry_gateway_request_duration_seconds",
      help: "Time from request to the end of the answer",
      labelNames: ["org", "app"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.ttfb = new Histogram({
      name: "gantry_gateway_time_to_first_byte_seconds",
      help: "Time from request to the pod's response head (including any hold while the app scales from zero)",
      labelNames: ["org", "app"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.coldStart = new Histogram({
      name: "gantry_gateway_cold_start_seconds",
      help: "Time an app took from a first held request to a ready pod",
      labelNames: ["org", "app"],
      buckets: [0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600],
      registers,
    });
    this.authFailures = new Counter({
      name: "gantry_gateway_auth_failures_total",
      help: "Refused requests by reason (missing, malformed, unknown, expired, wrong_secret, other_org, scope)",
      labelNames: ["reason"],
      registers,
    });
    this.rateLimited = new Counter({
      name: "gantry_gateway_rate_limited_total",
      help: "Requests refused with 429, by org and limit (rate, concurrency, held)",
      labelNames: ["org", "limit"],
      registers,
    });
    this.usageRequests = new Counter({
      name: "gantry_gateway_usage_requests_total",
      help: "Answered requests by org, app and key id",
      labelNames: ["org", "app", "key_id"],
      registers,
    });
    this.usageTokens = new Counter({
      name: "gantry_gateway_usage_tokens_total",
      help: "Tokens by org, app, key id and type (prompt, completion)",
      labelNames: ["org", "app", "key_id", "type"],
      registers,
    });
    this.upstreamRetries = new Counter({
      name: "gantry_gateway_upstream_retries_total",
      help: "Requests sent again because a pod refused the connection",
      labelNames: ["org", "app"],
      registers,
    });
    this.usageWrites = new Counter({
      name: "gantry_gateway_usage_writes_total",
      help: "Writes of usage ConfigMaps by result (ok, conflict, error)",
      labelNames: ["result"],
      registers,
    });
    this.loadReports = new Counter({
      name: "gantry_gateway_load_reports_total",
      help: "Load reports sent to operator replicas by result",
      labelNames: ["result"],
      registers,
    });
    new Gauge({
      name: "gantry_gateway_in_flight_requests",
      help: "Requests being served or held, by org and app",
      labelNames: ["org", "app"],
      registers,
      collect() {
        this.reset();
        for (const c of counts()) this.set({ org: c.org, app: c.app }, c.inFlight);
      },
    });
    new Gauge({
      name: "gantry_gateway_held_requests",
      help: "Requests waiting for their app to get a ready pod, by org and app",
      labelNames: ["org", "app"],
      registers,
      collect() {
        this.reset();
        for (const c of counts()) this.set({ org: c.org, app: c.app }, c.held);
      },
    });
  }
}
