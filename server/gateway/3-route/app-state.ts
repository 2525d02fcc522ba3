// Step 3, route: what the gateway knows about one app while it serves it: requests in flight and held, load per pod,
// pods that refused a connection or passed the gateway's own health check, and the warm-up of a scale from zero. Which
// of its usable pods a request takes is pick.ts.
import type { AppError } from "../../common/errors.ts";
import { AppStats } from "../metrics.ts";
import type { ModelAppSpec } from "../../../operator/api/v1alpha1/modelapp.ts";
import { leastLoaded } from "./pick.ts";
import type { Endpoint } from "../ports.ts";
import { PrefixRing, ringHash, type RingChoice } from "./prefix-ring.ts";

/** A request its app routes by PrefixHash: its key, the app's settings, and (once picked) how the ring chose. */
export interface PrefixRoute {
  key: string;
  settings: ModelAppSpec["loadBalancing"]["prefixHash"];
  via?: RingChoice["via"];
}

/** Keys whose last pod an app remembers (PrefixHash), least recently routed first out: 8192 × ~100 bytes. */
export const REMEMBERED_KEYS = 8192;

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
  /** PrefixHash's ring over the pods it was last built for (rebuilt when they or the replication change). */
  private ring: { of: string; ring: PrefixRing } | undefined;
  /** The pod each PrefixHash key (its ringHash) last went to, oldest first. */
  private readonly lastPod = new Map<number, string>();
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
   * The pod for a request, or undefined: by its PrefixHash `route` on the ring of the usable pods, with the pod its
   * key last went to (how it chose in route.via), else the least loaded (pick.ts). `avoid`: a pod the request just
   * failed on, taken only when no other is usable.
   */
  pick(endpoints: readonly Endpoint[], now: number, avoid?: string, route?: PrefixRoute): Endpoint | undefined {
    const turn = this.turn++;
    const usable = (ep: Endpoint) => this.usable(ep, now);
    if (!route)
      return (
        (avoid !== undefined
          ? leastLoaded(endpoints, (ep) => ep.id !== avoid && usable(ep), this.load, turn)
          : undefined) ?? leastLoaded(endpoints, usable, this.load, turn)
      );
    const all = endpoints.filter(usable);
    const others = avoid === undefined ? all : all.filter((ep) => ep.id !== avoid);
    const pods = others.length > 0 ? others : all;
    if (pods.length === 0) return undefined;
    const at = ringHash(route.key);
    const choice = this.ringOf(pods, route.settings.replication).pickAt(
      at,
      (id) => this.load.get(id) ?? 0,
      route.settings.meanLoadFactor / 100,
      this.lastPod.get(at),
    )!;
    route.via = choice.via;
    this.lastPod.delete(at);
    this.lastPod.set(at, choice.id);
    if (this.lastPod.size > REMEMBERED_KEYS) this.lastPod.delete(this.lastPod.keys().next().value!);
    return pods.find((ep) => ep.id === choice.id);
  }

  private ringOf(pods: readonly Endpoint[], replication: number): PrefixRing {
    const of = `${replication}|${pods
      .map((ep) => ep.id)
      .sort()
      .join(",")}`;
    if (this.ring?.of !== of)
      this.ring = {
        of,
        ring: new PrefixRing(
          pods.map((ep) => ep.id),
          replication,
        ),
      };
    return this.ring.ring;
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
