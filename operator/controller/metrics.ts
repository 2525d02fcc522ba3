// Prometheus metrics of the operator (prom-client, one registry per operator instance).
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { collectProcessMetrics } from "../../server/common/process-metrics.ts";
import type { ModelApp } from "../api/v1alpha1/modelapp.ts";

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: "gantry_operator_reconciles_total",
    help: "Reconciles by result (success, error, invalid, conflict)",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: "gantry_operator_reconcile_duration_seconds",
    help: "Time a reconcile takes",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "gantry_operator_workqueue_depth",
    help: "Apps waiting to be reconciled",
    registers: [this.registry],
  });
  readonly queueAdds = new Counter({
    name: "gantry_operator_workqueue_adds_total",
    help: "Keys added to the work queue, by the watch whose event added them (leader: all apps on becoming leader)",
    labelNames: ["kind"],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: "gantry_operator_workqueue_retries_total",
    help: "Failed reconciles queued again after their backoff",
    registers: [this.registry],
  });
  readonly watchEvents = new Counter({
    name: "gantry_operator_watch_events_total",
    help: "Watch events (adds, updates and deletes, relists included) by cache",
    labelNames: ["kind", "event"],
    registers: [this.registry],
  });
  readonly kubeRequests = new Counter({
    name: "gantry_operator_kube_requests_total",
    help: "Requests to the API server outside watches, by verb, resource and status code",
    labelNames: ["verb", "resource", "code"],
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: "gantry_operator_leader",
    help: "1 while this instance holds the leader lease",
    registers: [this.registry],
  });
  readonly scaleEvents = new Counter({
    name: "gantry_operator_autoscaler_scales_total",
    help: "Replica changes made by the autoscaler",
    labelNames: ["direction"],
    registers: [this.registry],
  });

  constructor(
    listApps: () => readonly ModelApp[],
    opts: { defaultMetrics?: boolean; inFlight?: () => Map<string, number> } = {},
  ) {
    const inFlight = opts.inFlight;
    new Gauge({
      name: "gantry_operator_app_in_flight_requests",
      help: "In-flight requests the gateways report per app (summed over gateways)",
      labelNames: ["namespace", "app"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [key, n] of inFlight?.() ?? []) {
          const slash = key.indexOf("/");
          this.set({ namespace: key.slice(0, slash), app: key.slice(slash + 1) }, n);
        }
      },
    });
    if (opts.defaultMetrics ?? true) collectProcessMetrics(this.registry, "gantry_operator_process_");
    new Gauge({
      name: "gantry_operator_apps",
      help: "ModelApps by condition type and status",
      labelNames: ["condition", "status"],
      registers: [this.registry],
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const app of listApps()) {
          for (const c of app.status?.conditions ?? [])
            counts.set(`${c.type}\u0000${c.status}`, (counts.get(`${c.type}\u0000${c.status}`) ?? 0) + 1);
        }
        for (const [k, n] of counts) {
          const [condition, status] = k.split("\u0000") as [string, string];
          this.set({ condition, status }, n);
        }
      },
    });
  }

  /** Counts writes (everything but get) for the steady-state check. */
  writes(): Promise<number> {
    return this.kubeRequests
      .get()
      .then((m) => m.values.filter((v) => v.labels.verb !== "get").reduce((n, v) => n + v.value, 0));
  }
}
