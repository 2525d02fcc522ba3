// The gateway's Prometheus metrics (one registry per gateway). In-flight and held requests are read from the
// gateway's own counters when scraped, so the request path does not update gauges. What every request updates
// (requests by code, latency and time-to-first-byte histograms, usage by key) is counted in plain numbers per app
// (AppStats) and turned into series only when scraped: prom-client hashes label values on every update
// (docs/decisions/0004-gateway-cpu-per-request.md).
import { Counter, Gauge, Histogram, Registry, type Metric, type MetricValue } from "prom-client";
import { collectProcessMetrics } from "../common/process-metrics.ts";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface AppCounts {
  org: string;
  app: string;
  inFlight: number;
  held: number;
}

/** A histogram's counts in plain numbers: per bucket (not cumulative; the last one is +Inf), sum and count. */
export class Buckets {
  readonly counts: number[] = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  sum = 0;
  count = 0;

  observe(v: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS.length && v > LATENCY_BUCKETS[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

/** What one key did with one app: requests answered and tokens metered. */
export interface KeyStats {
  requests: number;
  prompt: number;
  completion: number;
}

/** The per-request metrics of one app, updated on the request path without any label lookup. */
/** How the gateway chose a request's pod (the app's loadBalancing strategy, and for PrefixHash the ring's verdict). */
export type PodChoice = "least_load" | "ring_first" | "ring_kept" | "ring_next";

export class AppStats {
  readonly org: string;
  readonly app: string;
  /** Requests by status code. */
  readonly codes = new Map<number, number>();
  readonly duration = new Buckets();
  readonly ttfb = new Buckets();
  /** Usage by key id ("-" for calls without a key). */
  readonly keys = new Map<string, KeyStats>();
  /** Requests by the pod that answered and how it was chosen ("<pod> <choice>"). */
  readonly pods = new Map<string, number>();

  constructor(org: string, app: string) {
    this.org = org;
    this.app = app;
  }

  count(status: number): void {
    this.codes.set(status, (this.codes.get(status) ?? 0) + 1);
  }

  pod(pod: string, choice: PodChoice): void {
    const k = `${pod} ${choice}`;
    this.pods.set(k, (this.pods.get(k) ?? 0) + 1);
  }

  key(id: string): KeyStats {
    let k = this.keys.get(id);
    if (!k) {
      k = { requests: 0, prompt: 0, completion: 0 };
      this.keys.set(id, k);
    }
    return k;
  }
}

type Values = Array<MetricValue<string> & { metricName?: string }>;

/** A metric whose series are computed when scraped (the registry only calls get()). */
function collected(
  registry: Registry,
  name: string,
  help: string,
  type: "counter" | "histogram",
  values: (name: string) => Values,
) {
  const m = {
    name,
    help,
    type,
    aggregator: "sum",
    get: () => Promise.resolve({ name, help, type, aggregator: "sum", values: values(name) }),
    reset: () => undefined,
  };
  registry.registerMetric(m as unknown as Metric);
}

function histogramValues(name: string, stats: Iterable<AppStats>, pick: (s: AppStats) => Buckets): Values {
  const out: Values = [];
  for (const s of stats) {
    const b = pick(s);
    if (b.count === 0) continue;
    const labels = { org: s.org, app: s.app };
    let acc = 0;
    for (let i = 0; i <= LATENCY_BUCKETS.length; i++) {
      acc += b.counts[i]!;
      const le = i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : "+Inf";
      out.push({ labels: { le, ...labels }, value: acc, metricName: `${name}_bucket` });
    }
    out.push({ labels, value: b.sum, metricName: `${name}_sum` });
    out.push({ labels, value: b.count, metricName: `${name}_count` });
  }
  return out;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly apps = new Map<string, AppStats>();
  readonly coldStart: Histogram<"org" | "app">;
  readonly authFailures: Counter<"reason">;
  readonly rateLimited: Counter<"org" | "limit">;
  readonly upstreamRetries: Counter<"org" | "app">;
  readonly usageWrites: Counter<"result">;
  readonly loadReports: Counter<"result">;
  readonly connectionsRefused: Counter;

  constructor(counts: () => AppCounts[] = () => []) {
    const registers = [this.registry];
    collectProcessMetrics(this.registry, "gantry_gateway_");
    const stats = () => this.apps.values();
    collected(
      this.registry,
      "gantry_gateway_requests_total",
      "Requests to apps by org, app and status code",
      "counter",
      () =>
        [...stats()].flatMap((s) =>
          [...s.codes].map(([code, value]) => ({ labels: { org: s.org, app: s.app, code: String(code) }, value })),
        ),
    );
    collected(
      this.registry,
      "gantry_gateway_request_duration_seconds",
      "Time from request to the end of the answer",
      "histogram",
      (name) => histogramValues(name, stats(), (s) => s.duration),
    );
    collected(
      this.registry,
      "gantry_gateway_time_to_first_byte_seconds",
      "Time from request to the pod's response head (including any hold while the app scales from zero)",
      "histogram",
      (name) => histogramValues(name, stats(), (s) => s.ttfb),
    );
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
    collected(
      this.registry,
      "gantry_gateway_usage_requests_total",
      "Answered requests by org, app and key id",
      "counter",
      () =>
        [...stats()].flatMap((s) =>
          [...s.keys].map(([id, k]) => ({ labels: { org: s.org, app: s.app, key_id: id }, value: k.requests })),
        ),
    );
    collected(
      this.registry,
      "gantry_gateway_usage_tokens_total",
      "Tokens by org, app, key id and type (prompt, completion)",
      "counter",
      () =>
        [...stats()].flatMap((s) =>
          [...s.keys].flatMap(([id, k]) => [
            ...(k.prompt ? [{ labels: { org: s.org, app: s.app, key_id: id, type: "prompt" }, value: k.prompt }] : []),
            ...(k.completion
              ? [{ labels: { org: s.org, app: s.app, key_id: id, type: "completion" }, value: k.completion }]
              : []),
          ]),
        ),
    );
    collected(
      this.registry,
      "gantry_gateway_pod_requests_total",
      "Requests by the pod that answered and how it was chosen (least_load; PrefixHash: ring_first, ring_kept, ring_next)",
      "counter",
      () =>
        [...stats()].flatMap((s) =>
          [...s.pods].map(([k, value]) => {
            const [pod, choice] = k.split(" ");
            return { labels: { org: s.org, app: s.app, pod: pod!, choice: choice! }, value };
          }),
        ),
    );
    this.upstreamRetries = new Counter({
      name: "gantry_gateway_upstream_retries_total",
      help: "Requests sent again because a pod refused the connection or broke it before answering",
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
    this.connectionsRefused = new Counter({
      name: "gantry_gateway_connections_refused_total",
      help: "Connections answered 503 and closed: their address held clientLimits.connectionsPerAddress already",
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

  /** The per-request metrics of an app (kept while the gateway runs, as prom-client keeps its series). */
  app(org: string, app: string): AppStats {
    const k = `${org}/${app}`;
    let s = this.apps.get(k);
    if (!s) {
      s = new AppStats(org, app);
      this.apps.set(k, s);
    }
    return s;
  }
}
