import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ApiKeySecretDataSchema,
  checkKey,
  generateApiKey,
  hashSecret,
  keySecret,
  parseApiKey,
  parseExpiry,
  readKeySecret,
  verifySecret,
} from "../../../server/gateway/2-authenticate/api-keys.ts";

test("a generated key is <16 hex id>:<43 base64url secret> and parses back", () => {
  const k = generateApiKey();
  assert.match(k.key, /^[0-9a-f]{16}:[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(parseApiKey(k.key), { id: k.id, secret: k.secret });
  assert.notEqual(generateApiKey().key, k.key);
});

test("salted hashes: the same secret hashes differently; verification is exact", () => {
  const { secret } = generateApiKey();
  const a = hashSecret(secret),
    b = hashSecret(secret);
  assert.notEqual(a, b);
  assert.ok(verifySecret(a, secret) && verifySecret(b, secret));
  assert.ok(!verifySecret(a, `${secret.slice(0, -1)}${secret.endsWith("A") ? "B" : "A"}`));
  assert.ok(!verifySecret("hmac-sha256$bad", secret));
  assert.ok(!a.includes(secret));
});

test("a key Secret holds the hash, never the secret, and reads back", () => {
  const k = generateApiKey();
  const now = new Date("2026-01-01T00:00:00Z");
  const s = keySecret("acme", k, { scope: "admin", name: "ci", now, expires: new Date("2026-02-01T00:00:00Z") });
  assert.equal(s.metadata.name, `gantry-key-${k.id}`);
  assert.equal(s.metadata.labels["gantry.dev/api-key"], "true");
  assert.ok(!JSON.stringify(s).includes(k.secret));
  assert.ok(ApiKeySecretDataSchema.safeParse(s.stringData).success);
  const data = Object.fromEntries(Object.entries(s.stringData).map(([x, v]) => [x, Buffer.from(v).toString("base64")]));
  const rec = readKeySecret({ metadata: { namespace: "acme", resourceVersion: "7" }, data });
  assert.equal(rec?.org, "acme");
  assert.equal(rec?.version, "7");
  assert.equal(checkKey(rec, k.secret, now.getTime()), "ok");
  assert.equal(checkKey(rec, k.secret, Date.parse("2026-02-01T00:00:00Z")), "expired");
  assert.equal(checkKey(rec, generateApiKey().secret, now.getTime()), "wrong_secret");
  assert.equal(checkKey(undefined, k.secret, now.getTime()), "unknown");
  assert.equal(readKeySecret({ metadata: { namespace: "acme" }, data: { id: "eA==" } }), undefined);
  // A key the gateway could not read back is never built (it would be stored, listed by no one, usable by no one).
  assert.throws(() => keySecret("acme", k, { scope: "api", name: "n".repeat(254), now }), /invalid key: .*name/);
});

test("expiry: durations and RFC 3339 times; past or nonsense is refused", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  assert.equal(parseExpiry("30d", now).toISOString(), "2026-01-31T00:00:00.000Z");
  assert.equal(parseExpiry("12h", now).toISOString(), "2026-01-01T12:00:00.000Z");
  assert.equal(parseExpiry("90m", now).toISOString(), "2026-01-01T01:30:00.000Z");
  assert.equal(parseExpiry("2s", now).toISOString(), "2026-01-01T00:00:02.000Z");
  assert.equal(parseExpiry("2026-03-01T00:00:00Z", now).toISOString(), "2026-03-01T00:00:00.000Z");
  // Past the largest time a Date holds (year 275760): a clear error, not "Invalid time value" from toISOString.
  for (const bad of ["0d", "-1d", "soon", "2025-01-01T00:00:00Z", "30x", "", "99999999d", "9".repeat(400) + "s"])
    assert.throws(() => parseExpiry(bad, now), /invalid expiry/, bad);
});
