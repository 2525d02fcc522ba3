// Autoscaling from the in-flight request counts the gateways report. Replicas follow ceil(in-flight / target) within
// [minReplicas, maxReplicas]: up at once (a request held at zero replicas wakes the app), down only after the load has
// stayed lower for scaleDownDelay. Decisions are written through the ModelApp's scale subresource, the same door
// `kubectl scale` uses; the reconciler carries them to the Deployment.
//
// Transport: the gateways' load reports (operator/api/v1alpha1/load-report.ts), sent to every operator replica (so a
// new leader already knows the load). A snapshot replaces the gateway's previous one and counts for reportTtlSeconds;
// apps missing from it have 0 in flight at that gateway.
import { parseKeepAlive } from "../../server/common/duration.ts";
import type { LoadReport } from "../api/v1alpha1/load-report.ts";

export { LoadReportSchema, type LoadReport } from "../api/v1alpha1/load-report.ts";

/** The latest snapshot of every gateway; counts expire after the TTL. */
export class LoadReports {
  private readonly snapshots = new Map<string, { at: number; counts: Map<string, number> }>();
  private readonly ttlMs: number;

  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }

  /** Stores a snapshot; returns the keys of apps it reports busy. */
  record(report: LoadReport, now: number): string[] {
    const counts = new Map<string, number>();
    for (const a of report.apps)
      counts.set(`${a.namespace}/${a.name}`, (counts.get(`${a.namespace}/${a.name}`) ?? 0) + a.inFlight);
    this.snapshots.set(report.gateway, { at: now, counts });
    return [...counts].filter(([, n]) => n > 0).map(([k]) => k);
  }

  /** In-flight requests of an app summed over the gateways whose snapshot is fresh. */
  inFlight(key: string, now: number): number {
    return this.totals(now).get(key) ?? 0;
  }

  /** In-flight requests of every reported app, summed over the fresh snapshots (stale ones are dropped). */
  totals(now: number): Map<string, number> {
    const sum = new Map<string, number>();
    for (const [gateway, s] of this.snapshots) {
      if (now - s.at > this.ttlMs) {
        this.snapshots.delete(gateway);
        continue;
      }
      for (const [key, n] of s.counts) sum.set(key, (sum.get(key) ?? 0) + n);
    }
    return sum;
  }
}

export interface ScaleInput {
  inFlight: number;
  /** In-flight requests one replica should carry. */
  target: number;
  min: number;
  max: number;
  /** Desired replicas now (spec.replicas, within bounds). */
  current: number;
  /** Recent wants, oldest first, within the scale-down window. */
  history: ReadonlyArray<{ at: number; want: number }>;
  now: number;
  scaleDownDelayMs: number;
}

/**
 * The replicas an app should have, and the history to keep for the next decision. Pure.
 * The history is the window's running maximum (a monotonic queue): an entry matters only while no later entry wants
 * as much, so it holds at most one entry per distinct replica count, however long scaleDownDelay is.
 */
export function decideReplicas(i: ScaleInput): { replicas: number; history: Array<{ at: number; want: number }> } {
  const clamp = (n: number) => Math.min(i.max, Math.max(i.min, n));
  const want = clamp(Math.ceil(i.inFlight / Math.max(1, i.target)));
  // Nothing observed yet (a new app, a new leader): the current replicas count as wanted just now.
  const seen = i.history.length > 0 ? i.history : [{ at: i.now, want: i.current }];
  const history = seen.filter((h) => i.now - h.at < i.scaleDownDelayMs && h.want > want);
  history.push({ at: i.now, want });
  if (want >= i.current) return { replicas: want, history };
  // Scale down only to the highest want seen within the delay window (the queue's head).
  return { replicas: clamp(Math.min(i.current, history[0]!.want)), history };
}

/** scaleDownDelay in milliseconds (negative or unparsable: never scale down). */
export function scaleDownDelayMs(value: string): number {
  try {
    const ms = parseKeepAlive(value);
    return ms === null ? Number.POSITIVE_INFINITY : ms;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
