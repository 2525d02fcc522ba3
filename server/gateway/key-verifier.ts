// Checks presented keys against the key store, caching results briefly. A cached result is tied to the versions of
// the key's Secrets, so a revoked (deleted) or changed key fails at once, however long the cache would keep it.
import { checkKey, type KeyRecord } from "./keys.ts";
import type { KeyCheck } from "./auth.ts";
import type { KeyStore } from "./ports.ts";

const MAX_ENTRIES = 10_000;

export class KeyVerifier {
  private readonly cache = new Map<string, { versions: string; until: number; check: KeyCheck }>();
  private readonly store: Pick<KeyStore, "byId">;
  private readonly ttlMs: number;

  constructor(store: Pick<KeyStore, "byId">, ttlMs: number) {
    this.store = store;
    this.ttlMs = ttlMs;
  }

  check(id: string, secret: string, now: number): KeyCheck {
    const records = this.store.byId(id);
    if (records.length === 0) return { ok: false, reason: "unknown" };
    const versions = records.length === 1 ? records[0]!.version : records.map((r) => r.version).join(",");
    const cacheKey = `${id}:${secret}`;
    const hit = this.cache.get(cacheKey);
    if (hit && hit.versions === versions && hit.until > now) return expiredNow(hit.check, records, now);
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
      this.cache.set(cacheKey, { versions, until: now + this.ttlMs, check });
    }
    return check;
  }
}

/** A cached success still ends when the key expires. */
function expiredNow(check: KeyCheck, records: readonly KeyRecord[], now: number): KeyCheck {
  if (!check.ok) return check;
  const rec = records.find((r) => r.org === check.key.org);
  return rec?.expires && Date.parse(rec.expires) <= now ? { ok: false, reason: "expired" } : check;
}
