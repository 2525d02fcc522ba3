// Step 2, authenticate: checks presented keys against the key store, caching results briefly. A cached result is tied
// to the versions of the key's Secrets, so a revoked (deleted) or changed key fails at once, however long the cache
// would keep it. checkAuthorization keys its cache by the whole Authorization header, so a repeated caller costs one
// Map lookup and the key's record lookup (for its version), without parsing the header again.
import { checkKey, type KeyRecord } from "./api-keys.ts";
import { parseAuthorization, type KeyCheck, type VerifiedKey } from "./authorization.ts";
import type { KeyStore } from "../ports.ts";

const MAX_ENTRIES = 10_000;

export class KeyVerifier {
  private readonly cache = new Map<string, { id: string; versions: string; until: number; check: KeyCheck }>();
  private readonly store: Pick<KeyStore, "byId">;
  private readonly ttlMs: number;

  constructor(store: Pick<KeyStore, "byId">, ttlMs: number) {
    this.store = store;
    this.ttlMs = ttlMs;
  }

  /** The check of an Authorization header (missing or malformed ones included), cached by the header. */
  checkAuthorization(header: string | undefined, now: number): KeyCheck {
    if (header !== undefined) {
      const hit = this.cache.get(header);
      if (hit && hit.until > now) {
        const records = this.store.byId(hit.id);
        if (records.length === 0) return { ok: false, reason: "unknown" };
        if (versionsOf(records) === hit.versions) return expiredNow(hit.check, records, now);
      }
    }
    const parsed = parseAuthorization(header);
    return parsed.ok ? this.check(parsed.keyId, parsed.secret, now, header) : parsed;
  }

  /** A key checked earlier (a queued request's submitter, a console session's key) checked again: still stored in its
   * org and not expired. No secret: the store's index says whether the key still exists. */
  recheck(key: VerifiedKey, now: number): KeyCheck {
    const rec = this.store.byId(key.id).find((r) => r.org === key.org);
    if (!rec) return { ok: false, reason: "revoked" };
    if (rec.expires && Date.parse(rec.expires) <= now) return { ok: false, reason: "expired" };
    return { ok: true, key: { id: rec.id, org: rec.org, scope: rec.scope } };
  }

  check(id: string, secret: string, now: number, cacheKey = `${id}:${secret}`): KeyCheck {
    const records = this.store.byId(id);
    if (records.length === 0) return { ok: false, reason: "unknown" };
    const versions = versionsOf(records);
    const hit = this.cache.get(cacheKey);
    if (hit && hit.id === id && hit.versions === versions && hit.until > now)
      return expiredNow(hit.check, records, now);
    let check: KeyCheck = { ok: false, reason: "wrong_secret" };
    for (const rec of records) {
      const r = checkKey(rec, secret, now);
      if (r === "ok") {
        check = { ok: true, key: { id: rec.id, org: rec.org, scope: rec.scope } };
        break;
      }
      if (r === "expired") check = { ok: false, reason: "expired" };
    }
    if (this.ttlMs > 0) {
      if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
      this.cache.set(cacheKey, { id, versions, until: now + this.ttlMs, check });
    }
    return check;
  }
}

const versionsOf = (records: readonly KeyRecord[]): string =>
  records.length === 1 ? records[0]!.version : records.map((r) => r.version).join(",");

/** A cached success still ends when the key expires. */
function expiredNow(check: KeyCheck, records: readonly KeyRecord[], now: number): KeyCheck {
  if (!check.ok) return check;
  const rec = records.find((r) => r.org === check.key.org);
  return rec?.expires && Date.parse(rec.expires) <= now ? { ok: false, reason: "expired" } : check;
}
