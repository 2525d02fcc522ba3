import assert from "node:assert/strict";
import { test } from "node:test";
import {
  authorizationOf,
  decideAccess,
  decideAdmin,
  parseAuthorization,
  type KeyCheck,
} from "../../../server/gateway/2-authenticate/authorization.ts";

const ID = "0123456789abcdef";
const SECRET = "A".repeat(43);

test("Authorization: Key or Bearer, scheme case-insensitive, key id and secret", () => {
  for (const h of [`Key ${ID}:${SECRET}`, `key ${ID}:${SECRET}`, `BEARER ${ID}:${SECRET}`, `Key ${ID}:${SECRET}  `])
    assert.deepEqual(parseAuthorization(h), { ok: true, keyId: ID, secret: SECRET }, h);
  assert.deepEqual(parseAuthorization(undefined), { ok: false, reason: "missing" });
  assert.deepEqual(parseAuthorization(""), { ok: false, reason: "missing" });
  for (const h of [
    "Key",
    `Key${ID}:${SECRET}`,
    `Basic ${ID}:${SECRET}`,
    `Key ${ID}`,
    `Key ${ID}:`,
    `Key :${SECRET}`,
    `Key ${ID}: ${SECRET}`,
    "Bearer sk-openai-style",
  ])
    assert.deepEqual(parseAuthorization(h), { ok: false, reason: "malformed" }, h);
  // An id:secret pair that cannot be one of our keys is an invalid key, not a malformed header.
  for (const h of [
    "Key wrong:key",
    `Key ${ID}:short`,
    `Key ${ID.toUpperCase()}:${SECRET}`,
    `Key ${ID}:${SECRET}x`,
    `Bearer ${ID}:${SECRET}:${SECRET}`,
  ])
    assert.deepEqual(parseAuthorization(h), { ok: false, reason: "unknown" }, h);
});

const key = (org: string, scope: "api" | "admin" = "api"): KeyCheck => ({ ok: true, key: { id: ID, org, scope } });
const bad = (reason: "missing" | "unknown" | "expired"): KeyCheck => ({ ok: false, reason });

test("auth modes: private needs the org's key, shared any valid key, public none", () => {
  const table: Array<[string, KeyCheck, Record<string, number>]> = [
    ["no key", bad("missing"), { private: 401, shared: 401, public: 200 }],
    ["unknown", bad("unknown"), { private: 401, shared: 401, public: 200 }],
    ["expired", bad("expired"), { private: 401, shared: 401, public: 200 }],
    ["other org", key("other"), { private: 403, shared: 200, public: 200 }],
    ["own org", key("acme"), { private: 200, shared: 200, public: 200 }],
    ["own org admin", key("acme", "admin"), { private: 200, shared: 200, public: 200 }],
  ];
  for (const [name, check, want] of table)
    for (const mode of ["private", "shared", "public"] as const) {
      const d = decideAccess(mode, "acme", check);
      assert.equal(d.allow ? 200 : d.status, want[mode], `${name} on ${mode}`);
    }
  const pub = decideAccess("public", "acme", key("other"));
  assert.ok(pub.allow && pub.key?.org === "other", "a valid key on a public app is still attributed");
});

test("the management API: an admin key of that org only", () => {
  const status = (c: KeyCheck) => {
    const d = decideAdmin("acme", c);
    return d.allow ? 200 : d.status;
  };
  assert.equal(status(bad("missing")), 401);
  assert.equal(status(key("acme")), 403);
  assert.equal(status(key("other", "admin")), 403);
  assert.equal(status(key("acme", "admin")), 200);
  const missing = decideAdmin("acme", bad("missing"));
  assert.ok(!missing.allow && /admin key/.test(missing.message), "the 401 says what the management API needs");
});

test("Authorization: spaces or tabs after the scheme; several headers are joined and never parse as one key", () => {
  for (const h of [`Key\t${ID}:${SECRET}`, `Key \t  ${ID}:${SECRET}`])
    assert.deepEqual(parseAuthorization(h), { ok: true, keyId: ID, secret: SECRET }, JSON.stringify(h));
  const good = `Key ${ID}:${SECRET}`;
  assert.equal(authorizationOf(undefined, []), undefined);
  assert.equal(authorizationOf(good, ["Host", "x", "Authorization", good]), good);
  const two = authorizationOf(good, ["authorization", good, "AUTHORIZATION", "Key 1111111111111111:x"]);
  assert.deepEqual(parseAuthorization(two), { ok: false, reason: "malformed" });
});

test("x-api-key (the Anthropic SDKs' header) is the key when no Authorization is sent", () => {
  const key = `${ID}:${SECRET}`;
  const viaApiKey = authorizationOf(undefined, ["Host", "x", "X-Api-Key", key]);
  assert.deepEqual(parseAuthorization(viaApiKey), { ok: true, keyId: ID, secret: SECRET });
  // Authorization wins when both come; two x-api-key headers never parse as one key.
  const other = `Key 1111111111111111:${SECRET}`;
  assert.equal(authorizationOf(other, ["authorization", other, "x-api-key", key]), other);
  const two = authorizationOf(undefined, ["x-api-key", key, "x-api-key", key]);
  assert.deepEqual(parseAuthorization(two), { ok: false, reason: "malformed" });
  assert.deepEqual(parseAuthorization(authorizationOf(undefined, ["x-api-key", "nonsense"])), {
    ok: false,
    reason: "malformed",
  });
});
