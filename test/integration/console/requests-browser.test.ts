// The app page's "Queued requests" section in a real browser (Debian's Chromium through playwright-core, headless)
// against a real gateway (in process, memory stores) with fal's queue on a real broker (Debian's redis-server):
// requests submitted with fal's own JS client, held, answered and failed by a stand-in pod, shown queued, running,
// completed and failed with their latency and a failure's error (markup in it shown as text), checked with axe-core at
// desktop and phone width and reached by keyboard; the queue's metrics read from /metrics. The cluster-backed console
// test (browser.test.ts) covers the other pages.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { createFalClient } from "@fal-ai/client";
import type { Page } from "playwright-core";
import { silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { buildConsole } from "../../../server/setup/console-build.ts";
import { accessibilityProblems, launchBrowser, PHONE, screenshots, type TestBrowser } from "../../support/browser.ts";
import { HoldingPod, listen } from "../../support/queue.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";

const MARKUP = `<img src=x onerror="document.title='owned'"> model <b>failed</b>`;
const apps = new StaticApps(),
  keys = new MemoryKeys();
let redis: TestRedis, pod: HoldingPod, gateway: Gateway, base: string, assets: string;
let browser: TestBrowser, page: Page, apiKey: string;
let server: ReturnType<typeof createGatewayServer>;

before(async () => {
  assets = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-console-"));
  await buildConsole(undefined, assets);
  redis = await startTestRedis();
  pod = new HoldingPod();
  apps.set({ org: "acme", name: "chat", auth: "private", uid: "1", servedModel: "tiny" }, [
    endpointAt(await listen(pod.server)),
  ]);
  // One request at a time: the second waits while the first is held, so every state shows at once.
  const config = parseGatewayConfig({ queue: { redisUrl: redis.url, concurrencyPerReplica: 1 } });
  const own: { gateway?: Gateway } = {};
  server = createGatewayServer(config, (req, res) => own.gateway!.handle(req, res));
  base = await listen(server);
  gateway = own.gateway = new Gateway({
    config,
    apps,
    keys,
    logger: silentLogger,
    publicUrl: base,
    consoleAssets: assets,
  });
  await gateway.queue?.start();
  apiKey = (await keys.create("acme", { scope: "api" })).key;
  browser = await launchBrowser(base);
  page = await browser.context.newPage();
  page.on("dialog", (d) => {
    browser.problems.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
});

after(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
  await gateway?.close(0);
  pod?.server.closeAllConnections();
  pod?.server.close();
  await redis?.stop();
  if (assets) fs.rmSync(assets, { recursive: true, force: true });
});

const fal = () =>
  createFalClient({
    credentials: apiKey,
    requestMiddleware: async (r) => ({ ...r, url: r.url.replace("https://queue.fal.run", `${base}/_queue`) }),
  });

const submit = async (n: number) =>
  (await fal().queue.submit("acme/chat/v1/chat/completions", { input: { model: "tiny", n } })).request_id;

const heldNow = async (id: string) => {
  await pod.until(() => pod.held.some((h) => h.id === id));
  return pod.held.find((h) => h.id === id)!;
};

/** The row of a request once it shows `state` (the section polls every 3 s). */
async function rowIn(id: string, state: string) {
  const row = page.locator(`#queued-requests tr[data-request-id="${id}"]`, { has: page.getByText(state) });
  await row.waitFor({ timeout: 20_000 });
  return row;
}

test("the app page lists queued, running, completed and failed requests with latency and the error as text", async () => {
  const client = fal();
  const completed = await submit(1);
  (await heldNow(completed)).release();
  await client.queue.subscribeToStatus("acme/chat", { requestId: completed, pollInterval: 20 });
  const failed = await submit(2);
  (await heldNow(failed)).answer(422, { error: { message: MARKUP, type: "invalid_request_error" } });
  await client.queue.subscribeToStatus("acme/chat", { requestId: failed, pollInterval: 20 });
  const running = await submit(3);
  const held = await heldNow(running);
  const queued = await submit(4);

  const admin = (await keys.create("acme", { scope: "admin", name: "ops" })).key;
  await page.goto(`${base}/_gantry/console/`);
  await page.getByLabel("Admin key of your org").fill(admin);
  await page.keyboard.press("Enter");
  // By keyboard: the app's link is focused and followed with Enter.
  const link = page.locator("#apps").getByRole("link", { name: "chat" });
  await link.focus();
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Queued requests" }).waitFor();
  assert.match(await page.locator("#app-queue-url").innerText(), new RegExp(`^${base}/_queue/acme/chat$`));

  const done = await rowIn(completed, "completed");
  assert.match(await done.locator("td").nth(2).innerText(), /^\d+\.\d\d s$/, "a finished request's latency");
  const bad = await rowIn(failed, "failed");
  assert.equal(await bad.locator(".request-error").innerText(), `422 ${MARKUP}`, "the error, markup as text");
  assert.match(await bad.locator("td").nth(2).innerText(), /^\d+\.\d\d s$/);
  assert.equal(await page.locator("#queued-requests img, #queued-requests b").count(), 0, "no element from the error");
  assert.notEqual(await page.title(), "owned");
  const run = await rowIn(running, "running");
  assert.equal(await run.locator("td").nth(2).innerText(), "", "no latency while running");
  await rowIn(queued, "queued");
  await page.getByText("1 queued, 1 running, 1 completed, 1 failed (latest)").waitFor();

  // The table scrolls inside its own box at phone width, and the keyboard reaches it.
  const region = page.getByRole("region", { name: "Queued requests table" });
  await region.focus();
  assert.equal(await page.evaluate("document.activeElement.getAttribute('aria-label')"), "Queued requests table");
  assert.deepEqual(await accessibilityProblems(page), [], "axe at desktop width");
  await page.setViewportSize(PHONE);
  assert.deepEqual(await accessibilityProblems(page), [], "axe at phone width");
  await screenshots(page, "10-app-queued-requests");

  // Released, the running one completes and the queued one runs: the page follows.
  held.release();
  await rowIn(running, "completed");
  (await heldNow(queued)).release();
  await rowIn(queued, "completed");
  await page.getByText("0 queued, 0 running, 3 completed, 1 failed (latest)").waitFor();
});

test("the queue's metrics: queue size, in progress, waits, retries, webhook failures", async () => {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const name of [
    "gantry_queue_waiting",
    "gantry_queue_in_progress",
    "gantry_queue_wait_seconds_bucket",
    "gantry_queue_retries_total",
    "gantry_queue_webhook_failures_total",
    "gantry_queue_webhook_deliveries_total",
    "gantry_queue_finished_total",
  ])
    assert.match(text, new RegExp(`^# TYPE ${name.replace(/_bucket$/, "")} `, "m"), name);
  assert.match(text, /^gantry_queue_wait_seconds_count 4$/m, "each request's wait was observed once");
  assert.match(text, /^gantry_queue_finished_total\{org="acme",app="chat",outcome="error"\} 1$/m);
  assert.match(text, /^gantry_queue_finished_total\{org="acme",app="chat",outcome="ok"\} 3$/m);
  assert.match(text, /^gantry_queue_in_progress 0$/m);
});

test("no page asked another host for anything and none broke the CSP", () => {
  assert.deepEqual(browser.foreignRequests, []);
  assert.deepEqual(browser.problems, []);
});
