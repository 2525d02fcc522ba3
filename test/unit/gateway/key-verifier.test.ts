import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyVerifier } from "../../../server/gateway/2-authenticate/key-verifier.ts";
import { hashSecret, type KeyRecord } from "../../../server/gateway/2-authenticate/api-keys.ts";

const SECRET = "s".repeat(43);
const rec = (over: Partial<KeyRecord> = {}): KeyRecord => ({
  id: "0123456789abcdef",
  org: "acme",
  hash: hashSecret(SECRET),
  scope: "api",
  name: "",
  created: "2026-01-01T00:00:00Z",
  version: "1",
  ...over,
});

test("results are cached per key version: a change or deletion of the key applies at once", () => {
  let records: KeyRecord[] = [rec()];
  let lookups = 0;
  const v = new KeyVerifier(
    {
      byId: () => {
        lookups++;
        return records;
      },
    },
    60_000,
  );
  assert.deepEqual(v.check("0123456789abcdef", SECRET, 0), {
    ok: true,
    key: { id: "0123456789abcdef", org: "acme", scope: "api" },
  });
  assert.equal(v.check("0123456789abcdef", "x".repeat(43), 0).ok, false);
  records = [rec({ version: "2", scope: "admin" })];
  const after = v.check("0123456789abcdef", SECRET, 1);
  assert.ok(after.ok && after.key.scope === "admin", "a new version is verified again");
  records = [];
  assert.deepEqual(v.check("0123456789abcdef", SECRET, 2), { ok: false, reason: "unknown" }, "revoked");
  assert.ok(lookups >= 4);
});

test("an expiry ends a cached success; a copied key id in another org cannot shadow the real key", () => {
  const records = [
    rec({ org: "evil", hash: hashSecret("e".repeat(43)), version: "9" }),
    rec({ expires: "2026-01-01T00:00:10Z" }),
  ];
  const v = new KeyVerifier({ byId: () => records }, 60_000);
  const now = Date.parse("2026-01-01T00:00:00Z");
  const first = v.check("0123456789abcdef", SECRET, now);
  assert.ok(first.ok && first.key.org === "acme");
  assert.deepEqual(v.check("0123456789abcdef", SECRET, now + 11_000), { ok: false, reason: "expired" });
});

test("checks by Authorization header: cached by the header, yet a revoked or changed key fails at once", () => {
  let records: KeyRecord[] = [rec()];
  const v = new KeyVerifier({ byId: () => records }, 60_000);
  const header = `Key 0123456789abcdef:${SECRET}`;
  assert.deepEqual(v.checkAuthorization(undefined, 0), { ok: false, reason: "missing" });
  assert.deepEqual(v.checkAuthorization("Key nonsense", 0), { ok: false, reason: "malformed" });
  assert.ok(v.checkAuthorization(header, 0).ok);
  assert.ok(v.checkAuthorization(`Bearer 0123456789abcdef:${SECRET}`, 0).ok);
  assert.deepEqual(v.checkAuthorization(`Key 0123456789abcdef:${"x".repeat(43)}`, 0), {
    ok: false,
    reason: "wrong_secret",
  });
  assert.ok(v.checkAuthorization(header, 1).ok, "from the cache");
  records = [rec({ version: "2", hash: hashSecret("y".repeat(43)) })];
  assert.deepEqual(v.checkAuthorization(header, 2), { ok: false, reason: "wrong_secret" }, "a changed key");
  records = [];
  assert.deepEqual(v.checkAuthorization(header, 3), { ok: false, reason: "unknown" }, "revoked");
  records = [rec({ expires: "1970-01-01T00:00:10Z" })];
  assert.ok(v.checkAuthorization(header, 4).ok);
  assert.deepEqual(v.checkAuthorization(header, 11_000), { ok: false, reason: "expired" }, "expiry ends a cached hit");
});

test("a key checked earlier (a queued request's) is checked again for revocation and expiry, by id and org", () => {
  let records: KeyRecord[] = [rec({ expires: "2026-01-02T00:00:00Z" })];
  const v = new KeyVerifier({ byId: () => records }, 60_000);
  const key = { id: "0123456789abcdef", org: "acme", scope: "api" } as const;
  assert.deepEqual(v.recheck(key, Date.parse("2026-01-01T12:00:00Z")), { ok: true, key });
  assert.deepEqual(v.recheck(key, Date.parse("2026-01-02T00:00:00Z")), { ok: false, reason: "expired" });
  records = [rec({ org: "other" })];
  assert.deepEqual(v.recheck(key, 0), { ok: false, reason: "revoked" }, "a copy of the id in another org is not it");
  records = [];
  assert.deepEqual(v.recheck(key, 0), { ok: false, reason: "revoked" });
});
