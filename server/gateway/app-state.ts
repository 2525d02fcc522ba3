// What the gateway knows about one app while it serves it: requests in flight and held, load per pod, pods that
// refused a connection or passed the gateway's own health check, and the warm-up of a scale from zero. The pick of
// a pod (least in-flight requests, ties rotated) is here.
import type { AppError } from "../common/errors.ts";
import type { Endpoint } from "./ports.ts";

/** One request in progress for an app: aborted with `cause` when the app is deleted or the gateway stops. */
export interface Active {
  cancel(cause: AppError): void;
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
  rr = 0;
  uid: string | undefined;
  /** Metric children of this app, looked up once (label hashing is a measurable share of a small request). */
  readonly children = new Map<string, unknown>();

  constructor(org: string, name: string) {
    this.org = org;
    this.name = name;
  }

  /** The least-loaded usable pod, or undefined. */
  pick(endpoints: readonly Endpoint[], now: number): Endpoint | undefined {
    let best: Endpoint | undefined,
      bestLoad = Infinity,
      ties = 0;
    for (const ep of endpoints) {
      if (!ep.ready && !((this.probed.get(ep.id) ?? 0) > now)) continue;
      if ((this.failing.get(ep.id) ?? 0) > now) continue;
      const l = this.load.get(ep.id) ?? 0;
      if (l < bestLoad) {
        best = ep;
        bestLoad = l;
        ties = 1;
      } else if (l === bestLoad && (this.rr + ties++) % ties === 0) best = ep;
    }
    this.rr++;
    return best;
  }

  wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
