// A webhook receiver that is down (its port closed: connection refused) for over a minute, with the default retry
// schedule (10 attempts from 15 s, doubling), still gets every delivery once it is back: once per request, signed as
// fal signs, verified with the gateway's JWKS. Requests are submitted with fal's JS client to a gateway on a real
// broker (Debian's redis-server). The test waits for the outage itself (60 s) and otherwise on events: the failed
// attempts the gateway counts and the deliveries the receiver gets. It takes about 1 min 50 s (the 4th attempt is at
// 1 min 45 s).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createFalClient } from "@fal-ai/client";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { deliveryAttemptTimes } from "../../../server/gateway/queue/deliveries.ts";
import { HoldingPod, listen, startQueueGateway, WebhookReceiver, type QueueGateway } from "../../support/queue.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { freePort } from "../../support/server.ts";

const N = 5;
const OUTAGE_MS = 60_000;
let redis: TestRedis, pod: HoldingPod, gw: QueueGateway, receiver: WebhookReceiver;
let key: string;
const apps = new StaticApps(),
  keys = new MemoryKeys();

before(async () => {
  redis = await startTestRedis();
  pod = new HoldingPod();
  pod.autoRelease = true;
  apps.set({ org: "local", name: "echo", auth: "private", uid: "1" }, [endpointAt(await listen(pod.server))]);
  key = (await keys.create("local", { scope: "api" })).key;
  // The default schedule; only the SSRF guard is opened, as the receiver is on loopback.
  gw = await startQueueGateway(apps, keys, {
    queue: { redisUrl: redis.url, webhooks: { allowPrivateAddresses: true } },
  });
  receiver = new WebhookReceiver(() => `${gw.base}/_queue/.well-known/jwks.json`);
});

after(async () => {
  receiver?.server.closeAllConnections();
  receiver?.server.close();
  await gw?.close();
  pod?.server.closeAllConnections();
  pod?.server.close();
  await redis?.stop();
});

/** The gateway's webhook delivery attempts by outcome (ok, retry, failed), from its metrics. */
async function attempts(): Promise<Record<string, number>> {
  const m = await gw.gateway.metrics.registry.getSingleMetric("gantry_queue_webhook_deliveries_total")!.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.outcome), v.value]));
}

/** Resolves when `pred` holds on the metrics (read every 200 ms: the broker's worker runs apart from the test). */
async function untilAttempts(pred: (a: Record<string, number>) => boolean): Promise<Record<string, number>> {
  for (;;) {
    const a = await attempts();
    if (pred(a)) return a;
    await sleep(200);
  }
}

test("a receiver down for a minute gets every delivery once, signed, with the default retry schedule", async () => {
  const port = await freePort(); // nothing listens on it yet: every attempt is refused
  const webhookUrl = `http://127.0.0.1:${port}/hook`;
  const fal = createFalClient({
    credentials: key,
    requestMiddleware: async (r) => ({ ...r, url: r.url.replace("https://queue.fal.run", `${gw.base}/_queue`) }),
  });
  const down = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < N; i++)
    ids.push((await fal.queue.submit("local/echo/v1/chat/completions", { input: { i }, webhookUrl })).request_id);
  for (const id of ids) await fal.queue.subscribeToStatus("local/echo", { requestId: id, pollInterval: 50 });

  // Three attempts each fail within the first minute (at 0, 15 and 45 s); the outage lasts a minute at least.
  const during = await untilAttempts((a) => (a.retry ?? 0) >= 3 * N);
  await sleep(Math.max(0, down + OUTAGE_MS - Date.now()));
  assert.equal(receiver.deliveries.length, 0);
  assert.equal(during.ok ?? 0, 0);
  await listen(receiver.server, port);
  const back = Date.now();

  await receiver.until(() => receiver.deliveries.length >= N);
  const final = await untilAttempts((a) => (a.ok ?? 0) >= N);
  assert.deepEqual(final, { retry: 3 * N, ok: N }, "each delivery: three refused attempts, then one that arrived");
  assert.equal(receiver.deliveries.length, N, "once per request");
  const got = receiver.deliveries.map((d) => JSON.parse(d.body) as { request_id: string; status: string });
  assert.deepEqual(got.map((b) => b.request_id).sort(), [...ids].sort());
  assert.ok(got.every((b) => b.status === "OK"));
  assert.ok(
    receiver.deliveries.every((d) => d.verified),
    "every signature verifies against the JWKS",
  );
  // They arrived after the outage, at the 4th attempt of the schedule (1 min 45 s after the first), not before.
  const fourth = deliveryAttemptTimes({ attempts: 10, backoffMs: 15_000 })[3]!;
  for (const d of receiver.deliveries) {
    const signedAt = Number(d.headers["x-fal-webhook-timestamp"]) * 1000;
    assert.ok(signedAt >= back - 1000 && signedAt >= down + fourth - 1000, `delivered at ${signedAt - down} ms`);
  }
});
