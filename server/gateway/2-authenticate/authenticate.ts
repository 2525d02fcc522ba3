// Step 2, authenticate: who calls and whether they may. The key in the request's headers (authorization.ts parses
// them) is checked against the key store (key-verifier.ts, cached), the app's auth mode decides, and the key's limits
// (limiter.ts) give the request a slot. The console's playground requests and queued requests carry the key that made
// them (actAs), already checked: only its revocation or expiry since is checked again. Returns a slot to release when
// the request ends, or the Outcome that refuses it.
import type { IncomingMessage } from "node:http";
import type { GatewayConfig } from "../config.ts";
import type { RequestContext } from "../context.ts";
import type { GatewayMetrics } from "../metrics.ts";
import type { Outcome } from "../outcome.ts";
import type { AppInfo, KeyStore } from "../ports.ts";
import { authorizationOf, decideAccess, type KeyCheck, type VerifiedKey } from "./authorization.ts";
import { KeyVerifier } from "./key-verifier.ts";
import { KeyLimiter, limitRefusal, type LimitResult } from "./limiter.ts";

const PRESET = Symbol("gantry.presetKey");
type Marked = IncomingMessage & { [PRESET]?: VerifiedKey };

/** Marks a request (the console's rewritten playground request) as made with an already checked key. */
export const actAs = (req: IncomingMessage, key: VerifiedKey): void => {
  (req as Marked)[PRESET] = key;
};

const COUNTED = Symbol("gantry.limitsCounted");
type Counted = IncomingMessage & { [COUNTED]?: true };

/** Marks a request whose key's limits were applied already: a queued one, counted when it was submitted. */
export const limitsCounted = (req: IncomingMessage): void => {
  (req as Counted)[COUNTED] = true;
};

/** An admitted request: its key's slot, to give back when it ends (none for a public app called without a key). */
export type Admission = { release: (() => void) | undefined };

export class Authenticator {
  private readonly verifier: KeyVerifier;
  private readonly limiter: KeyLimiter;
  private readonly metrics: GatewayMetrics;
  private readonly now: () => number;

  constructor(o: {
    keys: Pick<KeyStore, "byId">;
    config: Pick<GatewayConfig, "keyCacheSeconds" | "limits">;
    metrics: GatewayMetrics;
    now: () => number;
  }) {
    const l = o.config.limits;
    this.verifier = new KeyVerifier(o.keys, o.config.keyCacheSeconds * 1000);
    this.limiter = new KeyLimiter(
      { requestsPerSecond: l.requestsPerSecond, burst: l.burst, concurrent: l.concurrent },
      l.orgs,
    );
    this.metrics = o.metrics;
    this.now = o.now;
  }

  /** The request's key, checked against the key store (cached); a preset key (a queued request's submitter, a
   * playground request's session key) checked again for revocation and expiry since it was verified. */
  check(req: IncomingMessage): KeyCheck {
    const preset = (req as Marked)[PRESET];
    if (preset) return this.verifier.recheck(preset, this.now());
    return this.verifier.checkAuthorization(authorizationOf(req.headers.authorization, req.rawHeaders), this.now());
  }

  /** A key given as `<key_id>:<key_secret>` (the console's sign-in). */
  checkKey(key: string): KeyCheck {
    return this.verifier.checkAuthorization(`Key ${key}`, this.now());
  }

  /** A request slot under the key's limits (its org's overrides apply), counted when refused. */
  acquireLimit(key: { id: string; org: string }): LimitResult {
    const l = this.limiter.acquire(key.id, key.org, this.now());
    if (!l.ok) this.metrics.rateLimited.inc({ org: key.org, limit: l.limit });
    return l;
  }

  /** Admits a request to `app` (its key id goes on the context), or the outcome that refuses it. */
  admit(ctx: RequestContext, app: AppInfo): Admission | Outcome {
    const decision = decideAccess(app.auth, ctx.org, this.check(ctx.req));
    if (!decision.allow) {
      this.metrics.authFailures.inc({ reason: decision.reason });
      return { kind: "denied", status: decision.status, message: decision.message };
    }
    if (!decision.key) return { release: undefined };
    ctx.keyId = decision.key.id;
    if ((ctx.req as Counted)[COUNTED]) return { release: undefined };
    // Limits are the key's: its org's overrides apply (also when it calls a shared app of another org).
    const l = this.acquireLimit(decision.key);
    return l.ok ? { release: l.release } : { kind: "limited", ...limitRefusal(l) };
  }
}
