// The queue's pure parts: fal's paths under the queue base, the query without fal_webhook, X-Fal-Request-Timeout, the
// status object fal's clients parse, the SSRF guard's address ranges, fal's webhook signature, and an app's queue URL.
import assert from "node:assert/strict";
import { createHash, createPublicKey, generateKeyPairSync, verify, type JsonWebKey } from "node:crypto";
import { test } from "node:test";
import { queueUrlOf } from "../../../server/common/queue-url.ts";
import { statusOf } from "../../../server/gateway/queue/status.ts";
import {
  blockedAddress,
  webhookBody,
  webhookUrlProblem,
  WebhookSigner,
} from "../../../server/gateway/queue/webhooks.ts";
import {
  queuePriority,
  queueRoute,
  requestUrls,
  splitQuery,
  startTimeoutMs,
} from "../../../server/gateway/queue/wire.ts";

const ID = "5057fca7-2eb3-468f-b95d-cefe92b0b9d4";

test("queue routes: submit with a subpath; status, stream, result and cancel without one; methods and bad ids", () => {
  assert.deepEqual(queueRoute("POST", "/acme/chat/v1/chat/completions"), {
    kind: "submit",
    org: "acme",
    app: "chat",
    rest: "/v1/chat/completions",
  });
  assert.deepEqual(queueRoute("POST", "/acme/chat"), { kind: "submit", org: "acme", app: "chat", rest: "/" });
  assert.equal(queueRoute("GET", `/acme/chat/requests/${ID}/status`).kind, "status");
  assert.deepEqual(queueRoute("GET", `/acme/chat/requests/${ID}/status/stream`), {
    kind: "status",
    org: "acme",
    app: "chat",
    id: ID,
    stream: true,
  });
  assert.equal(queueRoute("GET", `/acme/chat/requests/${ID}`).kind, "result");
  assert.equal(queueRoute("PUT", `/acme/chat/requests/${ID}/cancel`).kind, "cancel");
  assert.deepEqual(queueRoute("GET", `/acme/chat/requests/${ID}/cancel`), {
    kind: "error",
    status: 405,
    message: "method GET not allowed",
    allow: "PUT",
  });
  assert.equal(queueRoute("GET", "/acme/chat/requests/nope/status").kind, "error");
  assert.equal(queueRoute("POST", "/Acme/chat").kind, "error");
  assert.equal(queueRoute("GET", "/.well-known/jwks.json").kind, "jwks");
  assert.equal(requestUrls("https://g/_queue", "a", "b", ID).cancel_url, `https://g/_queue/a/b/requests/${ID}/cancel`);
});

test("fal_webhook leaves the query; X-Fal-Request-Timeout in seconds", () => {
  assert.deepEqual(splitQuery("?fal_webhook=https%3A%2F%2Fh%2Fx&a=1"), { query: "?a=1", webhook: "https://h/x" });
  assert.deepEqual(splitQuery(""), { query: "", webhook: undefined });
  assert.equal(startTimeoutMs("2.5"), 2500);
  assert.equal(startTimeoutMs("soon"), undefined);
  assert.equal(startTimeoutMs(undefined), undefined);
});

test("status: what fal's clients parse, by state", () => {
  const job = {
    id: ID,
    data: { noRetry: false } as never,
    returnvalue: { status: 200, contentType: "application/json", body: "", startedAt: 1000, finishedAt: 3500 },
    failedReason: "",
    attemptsStarted: 2,
    opts: {},
  };
  assert.deepEqual(statusOf(job, "waiting", 3, false, 2), {
    http: 202,
    body: { request_id: ID, retries: 1, max_retries: 2, status: "IN_QUEUE", queue_position: 3 },
  });
  assert.deepEqual(statusOf(job, "active", 0, true, 2).body.logs, []);
  const done = statusOf(job, "completed", 0, false, 2);
  assert.equal(done.http, 200);
  assert.equal(done.body.logs, null); // present: fal-client reads data["logs"]
  assert.deepEqual(done.body.metrics, { inference_time: 2.5 });
  const failed = statusOf({ ...job, failedReason: "stalled" }, "failed", 0, false, 2);
  assert.deepEqual([failed.body.status, failed.body.error], ["COMPLETED", "stalled"]);
});

test("SSRF guard: loopback, link-local, private and mapped addresses; names checked when resolved", () => {
  for (const ip of [
    "127.0.0.1",
    "10.0.0.1",
    "172.16.5.5",
    "192.168.1.1",
    "169.254.169.254",
    "::1",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "0.0.0.0",
  ])
    assert.equal(blockedAddress(ip), true, ip);
  for (const ip of ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]) assert.equal(blockedAddress(ip), false, ip);
  assert.match(webhookUrlProblem("http://localhost:8080/x", false)!, /loopback/);
  assert.match(webhookUrlProblem("http://[::1]/x", false)!, /loopback/);
  assert.match(webhookUrlProblem("ftp://example.com/x", false)!, /http/);
  assert.match(webhookUrlProblem("https://u:p@example.com/x", false)!, /credentials/);
  assert.equal(webhookUrlProblem("https://example.com/hook", false), undefined);
  assert.equal(webhookUrlProblem("http://127.0.0.1/x", true), undefined);
});

test("webhook signature: fal's message, verifiable with the JWKS; the body fal sends", async () => {
  const pem = generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  const signer = await WebhookSigner.load(undefined, async () => pem);
  const body = webhookBody(ID, {
    status: 200,
    contentType: "application/json",
    body: Buffer.from('{"ok":true}').toString("base64"),
    startedAt: 0,
    finishedAt: 1,
  });
  assert.deepEqual(JSON.parse(body), {
    request_id: ID,
    gateway_request_id: ID,
    status: "OK",
    payload: { ok: true },
    error: null,
  });
  const h = signer.headers(ID, "acme", body, 1_752_019_770_000);
  assert.equal(h["x-fal-webhook-timestamp"], "1752019770");
  const digest = createHash("sha256").update(body).digest("hex");
  const jwk = (JSON.parse(signer.jwks) as { keys: JsonWebKey[] }).keys[0]!;
  const message = Buffer.from(`${ID}\nacme\n1752019770\n${digest}`);
  const key = createPublicKey({ key: jwk, format: "jwk" });
  assert.equal(verify(null, message, key, Buffer.from(h["x-fal-webhook-signature"]!, "hex")), true);
  assert.equal(
    verify(
      null,
      Buffer.from(`${ID}\nother\n1752019770\n${digest}`),
      key,
      Buffer.from(h["x-fal-webhook-signature"]!, "hex"),
    ),
    false,
  );
  const failed = JSON.parse(
    webhookBody(ID, {
      status: 500,
      contentType: "text/plain",
      body: Buffer.from("boom").toString("base64"),
      error: "boom",
      startedAt: 0,
      finishedAt: 1,
    }),
  ) as { status: string; error: string; payload_error: string };
  assert.deepEqual([failed.status, failed.error, typeof failed.payload_error], ["ERROR", "boom", "string"]);
});

test("an app's queue URL sits beside its URL", () => {
  assert.equal(queueUrlOf("https://g.example/acme/chat", "acme", "chat"), "https://g.example/_queue/acme/chat");
  assert.equal(queueUrlOf("http://h:8080/base/acme/chat/", "acme", "chat"), "http://h:8080/base/_queue/acme/chat");
  assert.equal(queueUrlOf("https://g.example/other", "acme", "chat"), undefined);
});

test("X-Fal-Queue-Priority: normal (also when absent) or low, any case; anything else is refused", () => {
  assert.equal(queuePriority(undefined), "normal");
  assert.equal(queuePriority("normal"), "normal");
  assert.equal(queuePriority(" Low "), "low");
  for (const bad of ["", "high", "urgent", "1"]) assert.equal(queuePriority(bad), undefined, bad);
});
