// Step 2, authenticate: per-key rate limits: a token bucket for requests per second and a count of requests in flight.
// Pure arithmetic (the clock is passed in); the limiter that holds the state per key is limiter.ts.

export interface LimitSettings {
  /** Sustained requests per second; 0 = unlimited. */
  requestsPerSecond: number;
  /** Requests that may arrive at once above the sustained rate (bucket size). */
  burst: number;
  /** Requests in flight at once; 0 = unlimited. */
  concurrent: number;
}

export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Takes one token from a bucket refilled at `rate` per second up to `burst`. Returns the new bucket and, when empty,
 * the seconds until a token is back (for Retry-After, rounded up to a whole second, at least 1).
 */
export function takeToken(
  b: Bucket | undefined,
  now: number,
  rate: number,
  burst: number,
): { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterSeconds: number } {
  const size = Math.max(1, burst);
  const tokens = b ? Math.min(size, b.tokens + ((now - b.at) / 1000) * rate) : size;
  if (tokens >= 1) return { ok: true, bucket: { tokens: tokens - 1, at: now } };
  const wait = (1 - tokens) / rate;
  return { ok: false, bucket: { tokens, at: now }, retryAfterSeconds: Math.max(1, Math.ceil(wait)) };
}

/** The limits of an org: the defaults with its overrides. */
export function limitsFor(
  defaults: LimitSettings,
  overrides: Record<string, Partial<LimitSettings>>,
  org: string,
): LimitSettings {
  const o = overrides[org];
  return o ? { ...defaults, ...o } : defaults;
}
