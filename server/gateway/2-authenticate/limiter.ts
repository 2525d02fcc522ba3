// Step 2, authenticate: per-key request limits (state of limits.ts): requests per second and requests in flight, per
// gateway replica.
import { limitsFor, takeToken, type Bucket, type LimitSettings } from "./limits.ts";

export type LimitResult =
  { ok: true; release: () => void } | { ok: false; limit: "rate" | "concurrency"; retryAfterSeconds: number };

/** What a request refused by its key's limits is told (429, with Retry-After), on every route. */
export function limitRefusal(l: { limit: "rate" | "concurrency"; retryAfterSeconds: number }): {
  message: string;
  headers: Record<string, string>;
} {
  const what = l.limit === "rate" ? "requests per second" : "concurrent requests";
  return {
    message: `rate limit reached: too many ${what} for this key`,
    headers: { "retry-after": String(l.retryAfterSeconds) },
  };
}

export class KeyLimiter {
  private readonly state = new Map<string, { bucket: Bucket | undefined; inFlight: number }>();
  private readonly defaults: LimitSettings;
  private readonly orgs: Record<string, Partial<LimitSettings>>;

  constructor(defaults: LimitSettings, orgs: Record<string, Partial<LimitSettings>>) {
    this.defaults = defaults;
    this.orgs = orgs;
  }

  acquire(keyId: string, org: string, now: number): LimitResult {
    const l = limitsFor(this.defaults, this.orgs, org);
    let s = this.state.get(keyId);
    if (!s) {
      s = { bucket: undefined, inFlight: 0 };
      this.state.set(keyId, s);
    }
    if (l.concurrent > 0 && s.inFlight >= l.concurrent)
      return { ok: false, limit: "concurrency", retryAfterSeconds: 1 };
    if (l.requestsPerSecond > 0) {
      const t = takeToken(s.bucket, now, l.requestsPerSecond, l.burst);
      s.bucket = t.bucket;
      if (!t.ok) return { ok: false, limit: "rate", retryAfterSeconds: t.retryAfterSeconds };
    }
    s.inFlight++;
    const st = s;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        st.inFlight--;
      },
    };
  }
}
