import assert from "node:assert/strict";
import { test } from "node:test";
import {
  hashToken,
  newToken,
  sessionCookieOf,
  sessionSetCookie,
  sessionState,
  type SessionRecord,
} from "../../../server/gateway/console/session.ts";
import { SignInThrottle } from "../../../server/gateway/console/throttle.ts";
import type { KeyRecord } from "../../../server/gateway/2-authenticate/api-keys.ts";
import { readSessionSecret, sessionSecretName } from "../../../server/gateway/kube/sessions.ts";

const key = (o: Partial<KeyRecord> = {}): KeyRecord => ({
  id: "0123456789abcdef",
  org: "acme",
  scope: "admin",
  name: "",
  hash: "x",
  created: "2026-01-01T00:00:00Z",
  version: "1",
  ...o,
});
const session = (o: Partial<SessionRecord> = {}): SessionRecord => ({
  hash: "a".repeat(64),
  org: "acme",
  keyId: "0123456789abcdef",
  csrfSecret: "s",
  created: 0,
  lastSeen: 0,
  ...o,
});
const limits = { idleMs: 1000, maxMs: 5000 };

test("a session holds while its admin key does, until idle or too old", () => {
  assert.equal(sessionState(session(), [key()], 999, limits), "ok");
  assert.equal(sessionState(session(), [key()], 1000, limits), "idle");
  assert.equal(sessionState(session({ lastSeen: 4900 }), [key()], 5000, limits), "expired");
  assert.equal(sessionState(session(), [], 10, limits), "key-gone");
  assert.equal(sessionState(session(), [key({ org: "other" })], 10, limits), "key-gone", "a copy in another org");
  assert.equal(sessionState(session(), [key({ expires: "1970-01-01T00:00:00.005Z" })], 10, limits), "key-expired");
  assert.equal(sessionState(session(), [key({ scope: "api" })], 10, limits), "not-admin");
});

test("the session cookie: the org and the token's hash, nothing else accepted", () => {
  const { token, value } = newToken("acme", (n) => Buffer.alloc(n, 7));
  assert.equal(value, `acme.${token}`);
  assert.deepEqual(sessionCookieOf(`a=b; gantry_session=${value}; c=d`), { org: "acme", hash: hashToken(token) });
  for (const bad of [undefined, "", "gantry_session=acme", `gantry_session=ACME.${token}`, `gantry_session=acme.x`])
    assert.equal(sessionCookieOf(bad), undefined, String(bad));
  const set = sessionSetCookie(value, { secure: true, maxAgeSeconds: 3600 });
  assert.match(
    set,
    /^gantry_session=acme\.[\w-]{43}; Max-Age=3600; Path=\/_gantry\/; HttpOnly; Secure; SameSite=Strict$/,
  );
  assert.match(sessionSetCookie("", { secure: false, maxAgeSeconds: 3600 }), /^gantry_session=; Max-Age=0;/);
});

test("failed sign-ins: free ones, then doubling waits up to a minute; forgotten after 15 minutes or a success", () => {
  const t = new SignInThrottle(2);
  t.failed("a", 0);
  assert.equal(t.waitMs("a", 0), 0, "a free failure");
  t.failed("a", 0);
  assert.equal(t.waitMs("a", 0), 1000, "two free failures: the next attempt waits a second after the last");
  assert.equal(t.waitMs("a", 400), 600);
  t.failed("a", 0);
  assert.equal(t.waitMs("a", 0), 2000);
  assert.equal(t.waitMs("b", 0), 0, "per address");
  for (let i = 0; i < 10; i++) t.failed("a", 0);
  assert.equal(t.waitMs("a", 0), 60_000);
  assert.equal(t.waitMs("a", 15 * 60_000), 0);
  t.failed("c", 0);
  t.failed("c", 0);
  t.failed("c", 0);
  t.succeeded("c");
  assert.equal(t.waitMs("c", 0), 0);
});

test("a session Secret is read back only when it is one: name bound to the hash, every field present", () => {
  const hash = hashToken("t");
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const secret = (name: string, data: Record<string, string>) => ({
    metadata: { name, namespace: "acme" },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  });
  const data = { hash, keyId: "0123456789abcdef", csrfSecret: "s", created: "1", lastSeen: "2" };
  assert.deepEqual(readSessionSecret(secret(sessionSecretName(hash), data)), {
    hash,
    org: "acme",
    keyId: "0123456789abcdef",
    csrfSecret: "s",
    created: 1,
    lastSeen: 2,
  });
  assert.equal(readSessionSecret(secret("gantry-session-other", data)), undefined);
  assert.equal(readSessionSecret(secret(sessionSecretName(hash), { ...data, keyId: "" })), undefined);
  assert.equal(readSessionSecret(secret(sessionSecretName(hash), { ...data, created: "x" })), undefined);
});
