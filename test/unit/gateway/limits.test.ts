import assert from "node:assert/strict";
import { test } from "node:test";
import { limitsFor, takeToken, type Bucket } from "../../../server/gateway/2-authenticate/limits.ts";
import { KeyLimiter } from "../../../server/gateway/2-authenticate/limiter.ts";

test("token bucket: a burst, then the sustained rate, with Retry-After rounded up", () => {
  let b: Bucket | undefined;
  const ok: boolean[] = [];
  for (let i = 0; i < 4; i++) {
    const r = takeToken(b, 1000, 1, 3);
    b = r.bucket;
    ok.push(r.ok);
  }
  assert.deepEqual(ok, [true, true, true, false]);
  const refused = takeToken(b, 1000, 1, 3);
  assert.ok(!refused.ok && refused.retryAfterSeconds === 1);
  assert.ok(takeToken(b, 2000, 1, 3).ok, "one token back after a second");
  const slow = takeToken({ tokens: 0, at: 0 }, 0, 0.1, 1);
  assert.ok(!slow.ok && slow.retryAfterSeconds === 10);
});

test("per-org overrides", () => {
  const d = { requestsPerSecond: 10, burst: 20, concurrent: 4 };
  assert.deepEqual(limitsFor(d, { acme: { concurrent: 1 } }, "acme"), { ...d, concurrent: 1 });
  assert.equal(limitsFor(d, { acme: { concurrent: 1 } }, "other"), d);
});

test("the limiter counts requests in flight per key and releases them once", () => {
  const l = new KeyLimiter({ requestsPerSecond: 0, burst: 1, concurrent: 2 }, {});
  const a = l.acquire("k", "acme", 0),
    b = l.acquire("k", "acme", 0);
  assert.ok(a.ok && b.ok);
  const c = l.acquire("k", "acme", 0);
  assert.ok(!c.ok && c.limit === "concurrency");
  assert.ok(l.acquire("other", "acme", 0).ok, "another key has its own count");
  if (a.ok) {
    a.release();
    a.release();
  }
  assert.ok(l.acquire("k", "acme", 0).ok);
  assert.ok(!l.acquire("k", "acme", 0).ok);
});
