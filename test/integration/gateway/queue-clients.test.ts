// fal's own clients, unchanged, against the gateway's queue on a real broker (Debian's redis-server): the JS client
// (@fal-ai/client: queue.submit/status/streamStatus/result/cancel and fal.subscribe, pointed at the gateway with
// requestMiddleware) and the Python one (fal-client: submit/status/result/subscribe/cancel, through a TLS front, as it
// speaks only https), an OpenAI chat body through the queue to a real `gantry serve` on the tiny model, and webhook
// deliveries verified with fal's signature scheme against the gateway's JWKS, through a receiver that was down.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { createFalClient } from "@fal-ai/client";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { tinyModelPath } from "../../support/models.ts";
import {
  falPython,
  HoldingPod,
  listen,
  startQueueGateway,
  startTlsFront,
  WebhookReceiver,
  type QueueGateway,
} from "../../support/queue.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { createModel, freePort, startTestServer, type TestServer } from "../../support/server.ts";

let redis: TestRedis, upstream: TestServer, pod: HoldingPod, gw: QueueGateway, receiver: WebhookReceiver;
let tls: Awaited<ReturnType<typeof startTlsFront>>;
let key: string, receiverPort: number;
const apps = new StaticApps(),
  keys = new MemoryKeys();

before(async () => {
  redis = await startTestRedis();
  upstream = await startTestServer({ env: { GANTRY_NUM_PARALLEL: "2" } });
  await createModel(upstream.url, "tiny", await tinyModelPath());
  pod = new HoldingPod();
  const podUrl = await listen(pod.server);
  apps.set({ org: "local", name: "chat", auth: "private", uid: "1" }, [endpointAt(upstream.url)]);
  apps.set({ org: "local", name: "hold", auth: "private", uid: "2" }, [endpointAt(podUrl)]);
  key = (await keys.create("local", { scope: "api" })).key;
  // The TLS front's port is known before the gateway starts: its answers carry the URLs the Python client follows.
  const frontPort = await freePort();
  const queue = {
    redisUrl: redis.url,
    concurrencyPerReplica: 1,
    webhooks: { allowPrivateAddresses: true, backoffMs: 20 },
  };
  gw = await startQueueGateway(apps, keys, { queue }, `https://127.0.0.1:${frontPort}`);
  tls = await startTlsFront(gw.base, frontPort);
  receiverPort = await freePort();
  receiver = new WebhookReceiver(() => `${gw.base}/_queue/.well-known/jwks.json`);
});

after(async () => {
  receiver?.server.close();
  tls?.close();
  await gw?.close();
  pod?.server.closeAllConnections();
  pod?.server.close();
  await upstream?.stop();
  await redis?.stop();
});

const falJs = (credentials = key) =>
  createFalClient({
    credentials,
    requestMiddleware: async (r) => ({ ...r, url: r.url.replace("https://queue.fal.run", `${gw.base}/_queue`) }),
  });

const chat = { model: "tiny", messages: [{ role: "user", content: "Hello" }], max_tokens: 5 };
type Chat = { object: string; choices: Array<{ message: { role: string; content: string } }> };

test("JS client: an OpenAI chat body through queue.submit, status, streamStatus, result; fal.subscribe", async () => {
  const fal = falJs();
  const sub = await fal.queue.submit("local/chat/v1/chat/completions", { input: chat });
  assert.match(sub.request_id, /^[0-9a-f-]{36}$/);
  // Status, result and cancel URLs leave the app's subpath out.
  assert.equal(sub.status_url, `${tls.url}/_queue/local/chat/requests/${sub.request_id}/status`);
  const streamed = await fal.queue.streamStatus("local/chat", { requestId: sub.request_id, logs: true });
  const seen: string[] = [];
  streamed.on("data", (s: { status: string }) => seen.push(s.status));
  const done = (await streamed.done()) as { status: string; metrics: { inference_time: number } };
  assert.equal(done.status, "COMPLETED");
  assert.equal(seen.at(-1), "COMPLETED");
  assert.ok(done.metrics.inference_time >= 0);
  const status = await fal.queue.status("local/chat", { requestId: sub.request_id, logs: true });
  assert.equal(status.status, "COMPLETED");
  const r = await fal.queue.result("local/chat", { requestId: sub.request_id });
  const answer = r.data as Chat;
  assert.equal(r.requestId, sub.request_id);
  assert.equal(answer.object, "chat.completion");
  assert.equal(answer.choices[0]!.message.role, "assistant");
  const updates: string[] = [];
  const s = await fal.subscribe("local/chat/v1/chat/completions", {
    input: chat,
    pollInterval: 20,
    onQueueUpdate: (u) => updates.push(u.status),
  });
  assert.equal((s.data as Chat).object, "chat.completion");
  assert.equal(updates.at(-1), "COMPLETED");
  await assert.rejects(
    fal.queue.cancel("local/chat", { requestId: sub.request_id }),
    (e: { status: number; body: unknown }) => {
      assert.equal(e.status, 400);
      assert.deepEqual(e.body, { status: "ALREADY_COMPLETED" });
      return true;
    },
  );
});

test("JS client: cancel stops a running request at once; a waiting one reports its queue position", async () => {
  const fal = falJs();
  const running = await fal.queue.submit("local/hold/v1/chat/completions", { input: { n: 1 } });
  await pod.until(() => pod.held.some((h) => h.id === running.request_id));
  const waiting = await fal.queue.submit("local/hold/v1/chat/completions", { input: { n: 2 } });
  const st = await fal.queue.status("local/hold", { requestId: waiting.request_id });
  assert.deepEqual([st.status, (st as { queue_position: number }).queue_position], ["IN_QUEUE", 0]);
  assert.equal((await fal.queue.status("local/hold", { requestId: running.request_id })).status, "IN_PROGRESS");
  await fal.queue.cancel("local/hold", { requestId: running.request_id });
  await pod.until(() => pod.aborted.has(running.request_id));
  const s = await fal.queue.subscribeToStatus("local/hold", { requestId: running.request_id, pollInterval: 20 });
  assert.equal(s.status, "COMPLETED");
  assert.equal((s as unknown as { error_type: string }).error_type, "request_cancelled");
  // The next one runs now; released, it completes.
  await pod.until(() => pod.held.some((h) => h.id === waiting.request_id));
  pod.held.find((h) => h.id === waiting.request_id)!.release();
  await fal.queue.subscribeToStatus("local/hold", { requestId: waiting.request_id, pollInterval: 20 });
  const res = await fal.queue.result("local/hold", { requestId: waiting.request_id });
  assert.deepEqual((res.data as { echo: unknown }).echo, { n: 2 });
});

test("a key revoked after submit: its waiting request fails with 401 instead of running; a running one finishes", async (t) => {
  const other = await keys.create("local", { scope: "api", name: "leaving" });
  const theirs = falJs(other.key);
  const running = await theirs.queue.submit("local/hold/v1/chat/completions", { input: { n: 3 } });
  await pod.until(() => pod.held.some((h) => h.id === running.request_id));
  const waiting = await theirs.queue.submit("local/hold/v1/chat/completions", { input: { n: 4 } });
  await keys.revoke("local", other.record.id);
  pod.releaseAll(); // were the waiting one run, it would complete: the test would fail, not hang
  t.after(() => (pod.autoRelease = false));
  // The org's other key reads both: the running one completed, the waiting one was refused when it came to run.
  const fal = falJs();
  const done = await fal.queue.subscribeToStatus("local/hold", { requestId: running.request_id, pollInterval: 20 });
  assert.equal((done as { error?: string }).error, undefined);
  const refused = (await fal.queue.subscribeToStatus("local/hold", {
    requestId: waiting.request_id,
    pollInterval: 20,
  })) as unknown as { status: string; error: string; error_type: string };
  assert.equal(refused.status, "COMPLETED");
  assert.equal(refused.error, "the API key that submitted this request was revoked or expired before it ran");
  assert.equal(refused.error_type, "client_error");
  await assert.rejects(fal.queue.result("local/hold", { requestId: waiting.request_id }), (e: { status: number }) => {
    assert.equal(e.status, 401);
    return true;
  });
  assert.ok(!pod.arrivals.includes(waiting.request_id), "the pod never got it");
  // The revoked key itself reads nothing any more.
  await assert.rejects(
    theirs.queue.status("local/hold", { requestId: waiting.request_id }),
    (e: { status: number }) => {
      assert.equal(e.status, 401);
      return true;
    },
  );
});

test("X-Fal-Queue-Priority: a low request waits behind normal ones submitted after it; another value is 400", async (t) => {
  const fal = falJs();
  const hold = "local/hold/v1/chat/completions";
  const running = await fal.queue.submit(hold, { input: { n: 5 } });
  await pod.until(() => pod.held.some((h) => h.id === running.request_id));
  const low = (await fal.queue.submit(hold, { input: { n: 6 }, priority: "low" })).request_id;
  const normal = (await fal.queue.submit(hold, { input: { n: 7 }, priority: "normal" })).request_id;
  const position = async (requestId: string) =>
    ((await fal.queue.status("local/hold", { requestId })) as { queue_position: number }).queue_position;
  assert.deepEqual([await position(normal), await position(low)], [0, 1]);
  pod.releaseAll();
  t.after(() => (pod.autoRelease = false));
  await fal.queue.subscribeToStatus("local/hold", { requestId: low, pollInterval: 20 });
  assert.deepEqual(
    pod.arrivals.filter((id) => id === low || id === normal),
    [normal, low],
  );
  const bad = await fetch(`${gw.base}/_queue/${hold}`, {
    method: "POST",
    headers: { authorization: `Key ${key}`, "content-type": "application/json", "x-fal-queue-priority": "urgent" },
    body: "{}",
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get("x-fal-error-type"), "invalid_priority");
  assert.deepEqual(await bad.json(), {
    detail: "X-Fal-Queue-Priority must be normal or low",
    error_type: "invalid_priority",
  });
});

const py = promisify(execFile);

test("Python client through https: submit, status, result, subscribe, cancel", async () => {
  const python = falPython();
  const script = `
import json, fal_client
from fal_client.client import FalClientHTTPError
chat = ${JSON.stringify(chat)}
h = fal_client.submit("local/chat", chat, path="/v1/chat/completions")
res = h.get()
st = fal_client.status("local/chat", h.request_id, with_logs=True)
again = fal_client.result("local/chat", h.request_id)
sub = fal_client.subscribe("local/chat", chat, path="/v1/chat/completions", with_logs=True)
try:
    fal_client.cancel("local/chat", h.request_id)
    cancel = None
except FalClientHTTPError as e:
    cancel = e.status_code
try:
    fal_client.status("local/chat", "00000000-0000-0000-0000-000000000000")
    missing = None
except FalClientHTTPError as e:
    missing = [e.status_code, e.message]
print(json.dumps({"id": h.request_id, "res": res, "status": type(st).__name__, "metrics": st.metrics,
  "again": again == res, "sub": sub["object"], "cancel": cancel, "missing": missing}))
`;
  const { stdout } = await py(python, ["-c", script], {
    env: {
      ...process.env,
      FAL_KEY: key,
      FAL_QUEUE_RUN_HOST: `${tls.url.replace("https://", "")}/_queue`,
      SSL_CERT_FILE: tls.caFile,
    },
  });
  const out = JSON.parse(stdout) as {
    res: Chat;
    status: string;
    metrics: { inference_time: number };
    again: boolean;
    sub: string;
    cancel: number;
    missing: [number, string];
  };
  assert.equal(out.res.object, "chat.completion");
  assert.equal(out.status, "Completed");
  assert.ok(out.metrics.inference_time >= 0);
  assert.equal(out.again, true);
  assert.equal(out.sub, "chat.completion");
  assert.equal(out.cancel, 400);
  assert.deepEqual(out.missing, [404, "Request not found"]);
});

test("webhooks: signed as fal signs them, verified with the gateway's JWKS; a receiver that was down gets each one", async () => {
  const fal = falJs();
  receiver.down = true;
  await listen(receiver.server, receiverPort);
  const webhookUrl = `http://127.0.0.1:${receiverPort}/hook`;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++)
    ids.push((await fal.queue.submit("local/chat/v1/chat/completions", { input: chat, webhookUrl })).request_id);
  // Every delivery failed at least once before the receiver comes back.
  await receiver.until(() => receiver.refused >= 3);
  receiver.down = false;
  await receiver.until(() => receiver.deliveries.length >= 3);
  const got = receiver.deliveries.map(
    (d) => JSON.parse(d.body) as { request_id: string; status: string; payload: Chat },
  );
  assert.deepEqual(got.map((g) => g.request_id).sort(), [...ids].sort());
  assert.ok(receiver.deliveries.every((d) => d.verified));
  for (const g of got) {
    assert.equal(g.status, "OK");
    assert.equal(g.payload.object, "chat.completion");
  }
  assert.ok(receiver.deliveries.every((d) => d.headers["x-fal-webhook-user-id"] === "local"));
});
