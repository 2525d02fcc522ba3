// The queue's bad input and failures, over real HTTP with the real broker (Debian's redis-server): fal's 404 for an
// unknown or another org's request, the SSRF guard on webhook URLs, a full queue (429 + Retry-After), an oversized
// body (413 at submit), X-Fal-Request-Timeout (504, X-Fal-Request-Timeout-Type: user), the broker restarted (503
// meanwhile, nothing acknowledged lost), and a gateway killed with -9 under 200 requests (none lost or answered twice;
// the ones running at the kill run again on the next gateway).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { HoldingPod, listen, startQueueGateway, WebhookReceiver, type QueueGateway } from "../../support/queue.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { freePort, REPO } from "../../support/server.ts";

let redis: TestRedis, pod: HoldingPod, gw: QueueGateway;
let local: string, other: string;
const apps = new StaticApps(),
  keys = new MemoryKeys();

before(async () => {
  redis = await startTestRedis();
  pod = new HoldingPod();
  const podUrl = await listen(pod.server);
  apps.set({ org: "local", name: "hold", auth: "private", uid: "1" }, [endpointAt(podUrl)]);
  apps.set({ org: "local", name: "shared", auth: "shared", uid: "2" }, [endpointAt(podUrl)]);
  local = (await keys.create("local", { scope: "api" })).key;
  other = (await keys.create("other", { scope: "api" })).key;
  const queue = { redisUrl: redis.url, concurrencyPerReplica: 1, maxQueuedPerApp: 3, brokerTimeoutMs: 500 };
  gw = await startQueueGateway(apps, keys, { queue, maxBodyBytes: 4096 }, undefined, 0, true);
});

after(async () => {
  await gw?.close();
  pod?.server.closeAllConnections();
  pod?.server.close();
  await redis?.stop();
});

const call = async (
  path: string,
  o: { method?: string; key?: string; body?: string; headers?: Record<string, string> } = {},
) => {
  const r = await fetch(`${gw.base}/_queue${path}`, {
    method: o.method ?? (o.body !== undefined ? "POST" : "GET"),
    headers: { ...(o.key ? { authorization: `Key ${o.key}` } : {}), "content-type": "application/json", ...o.headers },
    ...(o.body !== undefined ? { body: o.body } : {}),
  });
  return { status: r.status, headers: r.headers, json: (await r.json()) as Record<string, unknown> };
};
const submit = (app: string, key: string, body = "{}", headers: Record<string, string> = {}) =>
  call(`/local/${app}/v1/chat/completions`, { key, body, headers });
/** Waits for the request to finish (polling its status, as fal's clients do). */
const finished = async (app: string, id: string, key: string) => {
  for (;;) {
    const s = await call(`/local/${app}/requests/${id}/status`, { key });
    if (s.json.status === "COMPLETED") return s.json;
    await new Promise((r) => setTimeout(r, 10));
  }
};

test("unknown and malformed ids: 404 in fal's shape; cancel says NOT_FOUND", async () => {
  const none = "00000000-0000-0000-0000-000000000000";
  for (const p of [
    `/local/hold/requests/${none}/status`,
    `/local/hold/requests/${none}`,
    "/local/hold/requests/x/status",
  ]) {
    const r = await call(p, { key: local });
    assert.equal(r.status, 404, p);
    assert.equal(r.json.detail, "Request not found");
  }
  const c = await call(`/local/hold/requests/${none}/cancel`, { key: local, method: "PUT" });
  assert.deepEqual([c.status, c.json.status], [404, "NOT_FOUND"]);
  const k = await call(`/local/hold/requests/${none}/status`);
  assert.equal(k.status, 401);
});

test("another org's request: 404, never its status", async () => {
  pod.releaseAll();
  const mine = await submit("shared", other);
  assert.equal(mine.status, 200);
  const id = String(mine.json.request_id);
  await finished("shared", id, other);
  for (const p of [`/local/shared/requests/${id}/status`, `/local/shared/requests/${id}`]) {
    const r = await call(p, { key: local });
    assert.deepEqual([r.status, r.json.detail], [404, "Request not found"], p);
  }
  assert.equal((await call(`/local/shared/requests/${id}`, { key: other })).status, 200);
  pod.autoRelease = false;
});

test("webhook URLs to loopback, link-local or private addresses are refused (SSRF)", async () => {
  for (const url of [
    "http://127.0.0.1:9/x",
    "http://169.254.169.254/latest",
    "http://localhost/x",
    "http://[::1]/",
    "http://10.1.2.3/",
    "file:///etc/passwd",
  ]) {
    const r = await call(`/local/hold/v1/chat/completions?fal_webhook=${encodeURIComponent(url)}`, {
      key: local,
      body: "{}",
    });
    assert.equal(r.status, 400, url);
    assert.equal(r.headers.get("x-fal-error-type"), "invalid_webhook");
  }
});

test("a path the app does not serve is refused at submit", async () => {
  const r = await call("/local/hold/api/pull", { key: local, body: "{}" });
  assert.equal(r.status, 403);
  const n = await call("/local/hold/v2/nothing", { key: local, body: "{}" });
  assert.equal(n.status, 404);
});

test("an oversized body is refused at submit (413)", async () => {
  const r = await submit("hold", local, JSON.stringify({ x: "a".repeat(5000) }));
  assert.equal(r.status, 413);
  assert.equal(r.json.error_type, "payload_too_large");
});

test("a full queue answers 429 with Retry-After; X-Fal-Request-Timeout passed before the start: 504, type user", async () => {
  pod.autoRelease = false;
  const running = await submit("hold", local);
  await pod.until(() => pod.held.some((h) => h.id === running.json.request_id));
  const late = await submit("hold", local, "{}", { "x-fal-request-timeout": "0.05" });
  const waiting = [late, await submit("hold", local), await submit("hold", local)];
  assert.ok(waiting.every((w) => w.status === 200));
  const full = await submit("hold", local);
  assert.equal(full.status, 429);
  assert.equal(full.json.error_type, "queue_full");
  assert.ok(Number(full.headers.get("retry-after")) > 0);
  // The deadline to start passes while the queue is busy.
  await new Promise((r) => setTimeout(r, 100));
  pod.releaseAll();
  const id = String(late.json.request_id);
  const s = await finished("hold", id, local);
  assert.equal(s.error_type, "request_timeout");
  const r = await fetch(`${gw.base}/_queue/local/hold/requests/${id}`, { headers: { authorization: `Key ${local}` } });
  assert.equal(r.status, 504);
  assert.equal(r.headers.get("x-fal-request-timeout-type"), "user");
  assert.equal(r.headers.get("x-fal-error-type"), "request_timeout");
  for (const w of waiting.slice(1)) await finished("hold", String(w.json.request_id), local);
  pod.autoRelease = false;
});

test("the broker restarted: submissions meanwhile get 503, and what it acknowledged runs after", async () => {
  pod.autoRelease = false;
  const running = await submit("hold", local);
  await pod.until(() => pod.held.some((h) => h.id === running.json.request_id));
  const queued = await submit("hold", local, JSON.stringify({ keep: 1 }));
  assert.equal(queued.status, 200);
  await redis.stop();
  const down = await submit("hold", local);
  assert.equal(down.status, 503);
  assert.equal(down.json.error_type, "broker_unavailable");
  assert.equal(down.headers.get("retry-after"), "1");
  await redis.start();
  pod.releaseAll();
  const id = String(queued.json.request_id);
  // The gateway reconnects by itself: polling goes on through 503s until the broker answers.
  for (;;) {
    const s = await call(`/local/hold/requests/${id}/status`, { key: local });
    if (s.json.status === "COMPLETED") break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = await call(`/local/hold/requests/${id}`, { key: local });
  assert.deepEqual(r.json.echo, { keep: 1 });
  pod.autoRelease = false;
});

test("kill -9 of the gateway under 200 requests: each completes once; those running at the kill run again", async () => {
  const kpod = new HoldingPod();
  const podUrl = await listen(kpod.server);
  const receiver = new WebhookReceiver(() => `http://127.0.0.1:${port}/_queue/.well-known/jwks.json`);
  const hook = await listen(receiver.server);
  const port = await freePort();
  const start = () => {
    const p = spawn(process.execPath, ["test/support/queue-gateway-main.ts"], {
      cwd: REPO,
      env: { ...process.env, REDIS_URL: redis.url, POD_URL: podUrl, PORT: String(port) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    return new Promise<typeof p>((resolve) => p.stdout.once("data", () => resolve(p)));
  };
  const first = await start();
  const ids: string[] = [];
  for (let i = 0; i < 200; i++) {
    const r = await fetch(
      `http://127.0.0.1:${port}/_queue/local/echo/v1/chat/completions?fal_webhook=${encodeURIComponent(`${hook}/h`)}`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ i }),
      },
    );
    ids.push(((await r.json()) as { request_id: string }).request_id);
  }
  await kpod.until(() => kpod.held.length === 8);
  const runningAtKill = kpod.held.map((h) => h.id);
  first.kill("SIGKILL");
  await new Promise((r) => first.once("exit", r));
  kpod.releaseAll();
  const second = await start();
  try {
    await receiver.until(() => receiver.deliveries.length >= 200);
    const delivered = receiver.deliveries.map((d) => JSON.parse(d.body) as { request_id: string; status: string });
    assert.deepEqual(delivered.map((d) => d.request_id).sort(), [...ids].sort());
    assert.ok(delivered.every((d) => d.status === "OK"));
    assert.ok(receiver.deliveries.every((d) => d.verified));
    // The requests running at the kill reached the pod twice (the first answer was lost with the gateway).
    for (const id of runningAtKill) assert.equal(kpod.arrivals.filter((a) => a === id).length, 2, id);
  } finally {
    second.kill("SIGKILL");
    kpod.server.closeAllConnections();
    kpod.server.close();
    receiver.server.close();
  }
});

test("the management API's app object gives its queueUrl beside its url", async () => {
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const r = await fetch(`${gw.base}/_gantry/v1/orgs/local/apps/hold`, { headers: { authorization: `Key ${admin}` } });
  const app = (await r.json()) as { url?: string; queueUrl?: string };
  assert.equal(r.status, 200);
  assert.equal(app.queueUrl, `${gw.base}/_queue/local/hold`);
  // The console's Requests list: the requests of the tests above, the one that started too late as failed.
  const list = await fetch(`${gw.base}/_gantry/v1/orgs/local/apps/hold/requests`, {
    headers: { authorization: `Key ${admin}` },
  });
  const { requests } = (await list.json()) as {
    requests: Array<{ state: string; latencyMs?: number; status?: number; error?: string }>;
  };
  assert.equal(list.status, 200);
  const late = requests.find((r) => r.status === 504);
  assert.equal(late?.state, "failed");
  assert.match(late!.error!, /X-Fal-Request-Timeout/);
  assert.ok(requests.some((r) => r.state === "completed" && r.latencyMs! >= 0));
});
