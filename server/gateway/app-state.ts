// What the gateway knows about one app while it serves it: requests in flight and held, load per pod, pods that
// refused a connection or passed the gateway's own health check, and the warm-up of a scale from zero. Which of its
// usable pods a request takes is pick.ts.
import type { AppError } from "../common/errors.ts";
import { AppStats } from "./metrics.ts";
import { leastLoaded } from "./pick.ts";
import type { Endpoint } from "./ports.ts";

/** A request under way at an app: what cutting it short needs. */
export interface Active {
  /** Set when the gateway (not the client) cut the request short. */
  cause?: AppError;
  /** Its exchange with a pod, while one runs. */
  forwarding?: { abort(reason: string): void } | undefined;
}

export class AppState {
  readonly org: string;
  readonly name: string;
  inFlight = 0;
  held = 0;
  readonly load = new Map<string, number>();
  readonly failing = new Map<string, number>();
  readonly probed = new Map<string, number>();
  readonly waiters = new Set<() => void>();
  readonly active = new Set<Active>();
  /** While warming (a held request triggered a scale-up), the app counts as busy even if its callers left. */
  warmUntil = 0;
  warmStarted = 0;
  probing = false;
  /** Turns of the tie-break between equally loaded pods. */
  turn = 0;
  uid: string | undefined;
  /** The app's per-request metrics (kept by the metrics, which outlive this state). */
  readonly stats: AppStats;

  constructor(org: string, name: string, stats = new AppStats(org, name)) {
    this.org = org;
    this.name = name;
    this.stats = stats;
  }

  /** Whether a pod may take a request now: ready (or passed the gateway's own check) and not refusing. */
  usable(ep: Endpoint, now: number): boolean {
    return (ep.ready || (this.probed.get(ep.id) ?? 0) > now) && !((this.failing.get(ep.id) ?? 0) > now);
  }

  /**
   * The pod for a request (pick.ts), or undefined. `avoid`: a pod the request just failed on, taken only when no other
   * is usable.
   */
  pick(endpoints: readonly Endpoint[], now: number, avoid?: string): Endpoint | undefined {
    const turn = this.turn++;
    const usable = (ep: Endpoint) => this.usable(ep, now);
    return (
      (avoid !== undefined
        ? leastLoaded(endpoints, (ep) => ep.id !== avoid && usable(ep), this.load, turn)
        : undefined) ?? leastLoaded(endpoints, usable, this.load, turn)
    );
  }

  /**
   * Drops what is known of pods that are gone: a new pod may get a gone one's address, and must not inherit its
   * passed health check (or its refusals).
   */
  forget(endpoints: readonly Endpoint[]): void {
    const ids = new Set(endpoints.map((e) => e.id));
    for (const m of [this.probed, this.failing]) for (const id of m.keys()) if (!ids.has(id)) m.delete(id);
    for (const [id, n] of this.load) if (n === 0 && !ids.has(id)) this.load.delete(id);
  }

  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Cuts every request under way short (the app was deleted or re-created, the gateway is stopping). */
  cancelAll(cause: AppError): void {
    for (const a of [...this.active]) {
      a.cause ??= cause;
      a.forwarding?.abort(cause.message);
    }
    this.wake();
  }
}
