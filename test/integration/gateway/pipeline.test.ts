// The gateway's request pipeline with the in-process seams (memory.ts: one app, keys in a Map, usage in memory) in
// front of a real `gantry serve` on the tiny model: what a one-off local server (`gantry run app.ts::chat`) gets, and
// the paths that need no cluster to be shown: a pod that refuses connections, the hold while an app has no pod, keep-
// alives, concurrency limits, hop-by-hop and Authorization headers, shutdown. The same code runs in the cluster
// (cluster.test.ts).
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, MemoryUsage, StaticApps } from "../../../server/gateway/memory.ts";
import { tinyModelPath } from "../../support/models.ts";
import { sumMetric } from "../../support/operator.ts";
import { createModel, freePort, startTestServer, type TestServer } from "../../support/server.ts";
import { eventually } from "../operator/helpers.ts";

let upstream: TestServer, echo: http.Server, echoUrl: string;
let gateway: Gateway, server: http.Server, base: string;
const apps = new StaticApps(),
  keys = new MemoryKeys(),
  usage = new MemoryUsage();
let key: string;
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

const listen = async (s: http.Server): Promise<string> => {
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

before(async () => {
  // Streams that must outlast a check on a fast machine need a context far beyond the tiny model's 512 tokens.
  upstream = await startTestServer({ env: { GANTRY_NUM_PARALLEL: "2", GANTRY_CONTEXT_LENGTH: "131072" } });
  await createModel(upstream.url, "tiny", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }));
  // A stand-in pod that shows what it received.
  echo = http.createServer((req, res) => {
    const got = { url: req.url ?? "", headers: req.headers, body: "" };
    seen.push(got);
    req.on("data", (c: Buffer) => (got.body += c.toString()));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", connection: "keep-alive", "x-pod": "echo" });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  echoUrl = await listen(echo);
  apps.set({ org: "local", name: "chat", auth: "private", uid: "1" }, [endpointAt(upstream.url)]);
  apps.set({ org: "local", name: "echo", auth: "public", uid: "2" }, [endpointAt(echoUrl)]);
  const config = parseGatewayConfig({
    maxBodyBytes: 4096,
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 2 },
    hold: { timeoutSeconds: 30, maxPerApp: 4, keepAliveSeconds: 1 },
    upstream: { retrySeconds: 5 },
  });
  gateway = new Gateway({ config, apps, keys, usage, logger: silentLogger });
  server = createGatewayServer(config, gateway.handle);
  base = await listen(server);
  key = (await keys.create("local", { scope: "api" })).key;
});

after(async () => {
  server?.closeAllConnections();
  server?.close();
  await gateway?.close(0);
  echo?.close();
  await upstream?.stop();
});

const chatBody = (stream: boolean, max: number) =>
  JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }], max_tokens: max, stream });

test("the openai client through the in-process gateway; usage is metered from the answer", async () => {
  const openai = new OpenAI({ baseURL: `${base}/local/chat/v1`, apiKey: key });
  const r = await openai.chat.completions.create({
    model: "tiny",
    messages: [{ role: "user", content: "Hello" }],
    max_tokens: 7,
  });
  assert.equal(r.usage?.completion_tokens, 7);
  // as the org's admin reads it, at once after the answer (the gateway accounts for ended requests in batches)
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const got = await fetch(`${base}/_gantry/v1/orgs/local/usage`, { headers: { authorization: `Key ${admin}` } });
  assert.equal(got.status, 200);
  const rows = (
    (await got.json()) as { usage: Array<{ hour: string; completionTokens: number; promptTokens: number }> }
  ).usage;
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.completionTokens, 7);
  assert.equal(rows[0]?.promptTokens, r.usage?.prompt_tokens);
  // A day asked for by its date (midnight UTC to midnight UTC, `to` exclusive), as a person writes it.
  const day = (offset: number) => new Date(Date.parse(rows[0]!.hour) + offset * 86_400_000).toISOString().slice(0, 10);
  const usageOf = async (q: string) => {
    const res = await fetch(`${base}/_gantry/v1/orgs/local/usage?${q}`, { headers: { authorization: `Key ${admin}` } });
    return { status: res.status, body: (await res.json()) as { usage?: unknown[]; from?: string } };
  };
  const that = await usageOf(`from=${day(0)}&to=${day(1)}`);
  assert.equal(that.status, 200);
  assert.equal(that.body.from, `${day(0)}T00:00:00.000Z`);
  assert.deepEqual(that.body.usage, rows);
  assert.deepEqual((await usageOf(`from=${day(-1)}&to=${day(0)}`)).body.usage, [], "the day before");
  const bad = await usageOf("from=yesterday");
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /expected an RFC 3339 time .* or a date/);
  // An offset's + typed into a URL unencoded arrives as a space: read as the + it was.
  const hour = rows[0]!.hour.slice(0, 19);
  const plus = await usageOf(`from=${hour}+00:00&to=${day(1)}`);
  assert.deepEqual([plus.status, plus.body.usage], [200, rows]);
  const twice = await usageOf(`from=${day(0)}&from=${day(-1)}`);
  assert.equal(twice.status, 400);
  assert.match(JSON.stringify(twice.body), /from is given more than once/);
});

test("a stream that turns usage off (include_usage: false) is metered all the same; the client sees no usage", async () => {
  const own = (await keys.create("local", { scope: "api" })).key;
  const r = await fetch(`${base}/local/chat/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Key ${own}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "tiny",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: false },
    }),
  });
  const text = await r.text();
  assert.match(text, /data: \[DONE\]/);
  assert.doesNotMatch(text, /"usage"/);
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const got = await fetch(`${base}/_gantry/v1/orgs/local/usage`, { headers: { authorization: `Key ${admin}` } });
  const rows = ((await got.json()) as { usage: Array<{ keyId: string; completionTokens: number }> }).usage;
  assert.equal(rows.find((u) => u.keyId === own.split(":")[0])?.completionTokens, 5);
});

test("a client that leaves a stream before its end is metered for the tokens it received", async () => {
  const own = (await keys.create("local", { scope: "api" })).key;
  const ac = new AbortController();
  const r = await fetch(`${base}/local/chat/api/generate`, {
    method: "POST",
    headers: { authorization: `Key ${own}` },
    body: JSON.stringify({ model: "tiny", prompt: "hi", options: { num_predict: 100_000 } }),
    signal: ac.signal,
  });
  const reader = r.body!.getReader();
  let lines = 0;
  while (lines < 20) {
    const { value } = await reader.read();
    lines += new TextDecoder().decode(value).split("\n").length - 1;
  }
  ac.abort();
  await reader.cancel().catch(() => undefined);
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const id = own.split(":")[0];
  // The gateway ends the request when it sees the client leave: wait for its row (no timing involved).
  let completion: number | undefined;
  while (completion === undefined) {
    const got = await fetch(`${base}/_gantry/v1/orgs/local/usage`, { headers: { authorization: `Key ${admin}` } });
    const rows = ((await got.json()) as { usage: Array<{ keyId: string; completionTokens: number }> }).usage;
    completion = rows.find((u) => u.keyId === id)?.completionTokens;
    if (completion === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(completion >= 20, `metered ${completion} completion tokens for a stream left after 20`);
});

test("headers: Authorization and hop-by-hop headers stay at the gateway; X-Request-Id and X-Forwarded-For go on", async () => {
  const r = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${base}/local/echo/api/tags?x=1`, {
      headers: { authorization: `Key ${key}`, "x-request-id": "abc-1", "keep-alive": "timeout=5", te: "trailers" },
    });
    req.once("response", resolve).once("error", reject);
  });
  r.resume();
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers["x-request-id"], "abc-1");
  assert.equal(r.headers["x-pod"], "echo");
  const got = seen.at(-1)!;
  assert.equal(got.url, "/api/tags?x=1");
  assert.equal(got.headers.authorization, undefined);
  assert.equal(got.headers["keep-alive"], undefined);
  assert.equal(got.headers.te, undefined);
  assert.equal(got.headers["x-request-id"], "abc-1");
  assert.equal(got.headers["x-forwarded-for"], "127.0.0.1");
});

test("a key id:secret pair that does not exist is an invalid key (401); only a header without such a pair is malformed", async () => {
  const openaiError = async (apiKey: string) => {
    const openai = new OpenAI({ baseURL: `${base}/local/chat/v1`, apiKey, maxRetries: 0 });
    const e = await openai.models.list().catch((x: unknown) => x);
    assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
    return e;
  };
  const wrongSecret = `${key.split(":")[0]!}:${"A".repeat(43)}`;
  for (const apiKey of ["wrong:key", wrongSecret]) {
    const e = await openaiError(apiKey);
    assert.equal(e.message, "401 invalid API key", apiKey);
    assert.equal(e.type, "authentication_error");
  }
  assert.match((await openaiError("not-a-key")).message, /malformed Authorization header: use Authorization: Key/);
  // The Anthropic SDK sends its key as x-api-key; the answer is in Anthropic's shape.
  const anthropic = new Anthropic({ baseURL: `${base}/local/chat`, apiKey: "wrong:key", maxRetries: 0 });
  const e = await anthropic.messages
    .create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: "hi" }] })
    .catch((x: unknown) => x);
  assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
  assert.deepEqual(e.error, { type: "error", error: { type: "authentication_error", message: "invalid API key" } });
  const text = await gateway.metrics.registry.metrics();
  assert.ok(sumMetric(text, "gantry_gateway_auth_failures_total", { reason: "unknown" }) >= 2);
  assert.ok(sumMetric(text, "gantry_gateway_auth_failures_total", { reason: "wrong_secret" }) >= 1);
  assert.ok(sumMetric(text, "gantry_gateway_auth_failures_total", { reason: "malformed" }) >= 1);
});

test("headers named in Connection are hop-by-hop too (RFC 9110 §7.6.1): the pod never sees them", async () => {
  const r = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${base}/local/echo/api/tags`, {
      headers: { connection: "keep-alive, X-Session-Secret", "x-session-secret": "s3cret", "x-kept": "1" },
    });
    req.once("response", resolve).once("error", reject);
  });
  r.resume();
  assert.equal(r.statusCode, 200);
  const got = seen.at(-1)!;
  assert.equal(got.headers["x-session-secret"], undefined);
  assert.equal(got.headers["x-kept"], "1");
});

test('requests to made-up orgs and apps are counted under org and app "-", never one series per name', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await fetch(`${base}/made-up-org-${i}/app-${i}/v1/models`)).status, 404);
  assert.equal((await fetch(`${base}/local/made-up-app/api/tags`)).status, 404);
  const text = await gateway.metrics.registry.metrics();
  assert.doesNotMatch(text, /made-up/);
  assert.ok(sumMetric(text, "gantry_gateway_requests_total", { org: "-", app: "-", code: "404" }) >= 4);
});

test("management API: an expiry past what a date holds, or a name with a line break, is 400 naming the field; no key is stored", async () => {
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const before = keys.list("local").length;
  for (const [body, param, message] of [
    [{ expires: "99999999d" }, "expires", /too far in the future/],
    [{ name: "ci\nadmin  api  2026-01-01" }, "name", /control characters/],
  ] as const) {
    const r = await fetch(`${base}/_gantry/v1/orgs/local/keys`, {
      method: "POST",
      headers: { authorization: `Key ${admin}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(r.status, 400);
    const e = ((await r.json()) as { error: { param: string; message: string } }).error;
    assert.equal(e.param, param);
    assert.match(e.message, message);
  }
  assert.equal(keys.list("local").length, before);
});

test("/healthz, /readyz and /metrics answer GET and HEAD, other methods 405, on the main and the metrics address", async () => {
  const metricsServer = createGatewayServer(parseGatewayConfig({}), gateway.handleSystem);
  const metricsBase = await listen(metricsServer);
  try {
    for (const at of [base, metricsBase]) {
      assert.equal((await fetch(`${at}/healthz`)).status, 200);
      assert.equal((await fetch(`${at}/readyz`, { method: "HEAD" })).status, 200);
      assert.match(await (await fetch(`${at}/metrics`)).text(), /gantry_gateway_requests_total/);
      const post = await fetch(`${at}/healthz`, { method: "POST" });
      assert.equal(post.status, 405, at);
      assert.equal(post.headers.get("allow"), "GET, HEAD");
      assert.equal((await fetch(`${at}/metrics`, { method: "DELETE" })).status, 405);
    }
    assert.equal((await fetch(`${metricsBase}/local/echo/api/tags`)).status, 404, "only the process's routes there");
  } finally {
    metricsServer.closeAllConnections();
    metricsServer.close();
  }
});

test("a caller's keep_alive never reaches the pod: nobody can unload the model every caller of the app uses", async () => {
  for (const [rest, body] of [
    ["/api/generate", '{"model":"m","keep_alive":0}'],
    ["/api/chat", '{"model":"m","messages":[],"keep\\u005falive":"1s"}'],
    ["/api/embed", '{"model":"m","input":"x","keep_alive":0}'],
  ] as const) {
    const r = await fetch(`${base}/local/echo${rest}`, { method: "POST", body });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const got = JSON.parse(seen.at(-1)!.body) as Record<string, unknown>;
    assert.equal(got.model, "m", rest);
    assert.ok(!("keep_alive" in got), `${rest}: ${seen.at(-1)!.body}`);
  }
  // The real server: a load request with keep_alive 0 loads instead of unloading; the model stays loaded.
  const h = { authorization: `Key ${key}` };
  const r = await fetch(`${base}/local/chat/api/generate`, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ model: "tiny", keep_alive: 0 }),
  });
  assert.notEqual(((await r.json()) as { done_reason: string }).done_reason, "unload");
  const ps = (await (await fetch(`${base}/local/chat/api/ps`, { headers: h })).json()) as { models: unknown[] };
  assert.equal(ps.models.length, 1);
});

test("a pod that refuses connections is skipped; the request is answered by another", async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  apps.set({ org: "local", name: "chat", auth: "private", uid: "1" }, [endpointAt(dead), endpointAt(upstream.url)]);
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push(
        (await fetch(`${base}/local/chat/api/version`, { headers: { authorization: `Key ${key}` } })).status,
      );
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    assert.ok(sumMetric(await gateway.metrics.registry.metrics(), "gantry_gateway_upstream_retries_total") >= 1);
  } finally {
    apps.set({ org: "local", name: "chat", auth: "private", uid: "1" }, [endpointAt(upstream.url)]);
  }
});

test("an app without a pod holds requests (SSE keep-alives) and sends them on when one appears; cold start is measured", async () => {
  apps.set({ org: "local", name: "later", auth: "private", uid: "3" }, []);
  const h = { authorization: `Key ${key}`, "content-type": "application/json" };
  const sse = fetch(`${base}/local/later/v1/chat/completions`, { method: "POST", headers: h, body: chatBody(true, 5) });
  const plain = fetch(`${base}/local/later/v1/chat/completions`, {
    method: "POST",
    headers: h,
    body: chatBody(false, 3),
  });
  // The app gets its pod once two keep-alives have come (not after a sleep: a slow machine sends the second later).
  const reader = (await sse).body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while ((text.match(/^: warming up$/gm) ?? []).length < 2) {
    const r = await reader.read();
    assert.ok(!r.done, `the held stream ended early: ${text}`);
    text += r.value;
  }
  await eventually("both requests held", async () => (gateway.loadSnapshot()[0]?.inFlight === 2 ? true : undefined));
  assert.deepEqual(gateway.loadSnapshot(), [{ namespace: "local", name: "later", inFlight: 2 }]);
  apps.set({ org: "local", name: "later", auth: "private", uid: "3" }, [endpointAt(upstream.url, false)]);
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  const lines = text.split("\n").filter(Boolean);
  assert.deepEqual(lines.slice(0, 2), [": warming up", ": warming up"]);
  assert.equal(lines.at(-1), "data: [DONE]");
  assert.ok(!text.includes('"usage"'), "the usage event the gateway asked for is not passed on");
  assert.equal(((await (await plain).json()) as { usage: { completion_tokens: number } }).usage.completion_tokens, 3);
  assert.equal(
    sumMetric(await gateway.metrics.registry.metrics(), "gantry_gateway_cold_start_seconds_count", { app: "later" }),
    1,
    "the not-ready pod was health-checked by the gateway",
  );
  assert.deepEqual(gateway.loadSnapshot(), []);
});

test("a client that goes away while held stops waiting; the app keeps warming", async () => {
  apps.set({ org: "local", name: "cold", auth: "private", uid: "4" }, []);
  const held = async () =>
    sumMetric(await gateway.metrics.registry.metrics(), "gantry_gateway_held_requests", { app: "cold" });
  const ac = new AbortController();
  const r = fetch(`${base}/local/cold/api/version`, { headers: { authorization: `Key ${key}` }, signal: ac.signal });
  await eventually("the request held", async () => ((await held()) === 1 ? true : undefined), 10_000, 20);
  ac.abort();
  await assert.rejects(r);
  // Once the gateway has let the request go, the app still counts as warming (until the hold timeout, 30 s).
  await eventually("the request let go", async () => ((await held()) === 0 ? true : undefined), 10_000, 20);
  assert.deepEqual(gateway.loadSnapshot(), [{ namespace: "local", name: "cold", inFlight: 1 }], "still warming");
  apps.delete("local", "cold");
  await eventually("the deleted app no longer warming", async () =>
    gateway.loadSnapshot().length === 0 ? true : undefined,
  );
});

test("per-key concurrency: the third concurrent request of a key gets 429 with Retry-After", async () => {
  const h = { authorization: `Key ${key}`, "content-type": "application/json" };
  const ac = new AbortController();
  const long = [0, 1].map(() =>
    fetch(`${base}/local/chat/v1/chat/completions`, {
      method: "POST",
      headers: h,
      body: chatBody(true, 100_000),
      signal: ac.signal,
    }),
  );
  const started = await Promise.all(long);
  const third = await fetch(`${base}/local/chat/api/version`, { headers: h });
  assert.equal(third.status, 429);
  assert.equal(third.headers.get("retry-after"), "1");
  assert.match(((await third.json()) as { error: string }).error, /concurrent requests/);
  ac.abort();
  for (const s of started) await s.body?.cancel().catch(() => undefined);
  // The slots are given back once the gateway has seen the clients go (not within a fixed time).
  await eventually("a request of the key accepted again", async () => {
    const r = await fetch(`${base}/local/chat/api/version`, { headers: h });
    await r.body?.cancel();
    return r.status === 200 ? true : undefined;
  });
});

test("an admin key is held to its limits in the management API too: slots given back after each call, 429 when full", async () => {
  const admin = (await keys.create("local", { scope: "admin" })).key;
  const h = { authorization: `Key ${admin}` };
  // One after another, more calls than the key's 2 concurrent slots: each gives its slot back.
  for (let i = 0; i < 5; i++)
    assert.equal((await fetch(`${base}/_gantry/v1/orgs/local/keys`, { headers: h })).status, 200);
  const ac = new AbortController();
  const started = await Promise.all(
    [0, 1].map(() =>
      fetch(`${base}/local/chat/v1/chat/completions`, {
        method: "POST",
        headers: { ...h, "content-type": "application/json" },
        body: chatBody(true, 100_000),
        signal: ac.signal,
      }),
    ),
  );
  const before = keys.list("local").length;
  const full = await fetch(`${base}/_gantry/v1/orgs/local/keys`, { method: "POST", headers: h });
  assert.equal(full.status, 429);
  assert.equal(full.headers.get("retry-after"), "1");
  assert.equal(((await full.json()) as { error: { type: string } }).error.type, "rate_limit_error");
  assert.equal(keys.list("local").length, before, "no key made");
  ac.abort();
  for (const s of started) await s.body?.cancel().catch(() => undefined);
  await eventually("the management API answers the key again", async () => {
    const r = await fetch(`${base}/_gantry/v1/orgs/local/apps`, { headers: h });
    await r.body?.cancel();
    return r.status === 200 ? true : undefined;
  });
});

test("bad input: body too large 413, invalid JSON passed to the pod (400 in its shape)", async () => {
  const h = { authorization: `Key ${key}`, "content-type": "application/json" };
  const big = await fetch(`${base}/local/chat/api/chat`, { method: "POST", headers: h, body: "x".repeat(5000) });
  assert.equal(big.status, 413);
  assert.equal(typeof ((await big.json()) as { error: string }).error, "string");
  const bad = await fetch(`${base}/local/chat/v1/chat/completions`, { method: "POST", headers: h, body: "{nope" });
  assert.equal(bad.status, 400);
  assert.equal(typeof ((await bad.json()) as { error: { message: string } }).error.message, "string");
});

test("management API: HEAD answers wherever GET does (status and headers, no body); Allow lists HEAD with GET", async () => {
  const admin = (await keys.create("local", { scope: "admin", name: "head" })).key;
  const h = { authorization: `Key ${admin}` };
  for (const resource of ["keys", "apps", "usage"]) {
    const get = await fetch(`${base}/_gantry/v1/orgs/local/${resource}`, { headers: h });
    const head = await fetch(`${base}/_gantry/v1/orgs/local/${resource}`, { method: "HEAD", headers: h });
    assert.deepEqual([get.status, head.status], [200, 200], resource);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"), resource);
    assert.equal(await head.text(), "", resource);
  }
  const wrong = await fetch(`${base}/_gantry/v1/orgs/local/apps`, { method: "PUT", headers: h });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "GET, HEAD");
  assert.equal((await fetch(`${base}/_gantry/v1/orgs/local/keys/x`, { method: "HEAD", headers: h })).status, 405);
});

test("the pod's request log carries the request's X-Request-Id, given or made by the gateway, to match the two logs", async () => {
  const ask = (headers: Record<string, string>) =>
    fetch(`${base}/local/chat/api/generate`, {
      method: "POST",
      headers: { authorization: `Key ${key}`, ...headers },
      body: JSON.stringify({ model: "tiny", prompt: "hi", stream: false, options: { num_predict: 2 } }),
    });
  const given = await ask({ "x-request-id": "trace-4f2a:7" });
  assert.equal(given.headers.get("x-request-id"), "trace-4f2a:7");
  const made = (await ask({})).headers.get("x-request-id")!;
  assert.match(made, /^[0-9a-f]{32}$/);
  await eventually("both ids in the pod's log", async () =>
    upstream.logs().includes(`"requestId":"trace-4f2a:7"`) && upstream.logs().includes(`"requestId":"${made}"`)
      ? true
      : undefined,
  );
});

test("management API: a key whose expiry has passed is listed as expired (it no longer works)", async () => {
  const admin = (await keys.create("local", { scope: "admin", name: "lister" })).key;
  const old = await keys.create("local", { scope: "api", name: "old", expires: new Date(Date.now() - 60_000) });
  const soon = await keys.create("local", { scope: "api", name: "soon", expires: new Date(Date.now() + 3_600_000) });
  const r = await fetch(`${base}/_gantry/v1/orgs/local/keys`, { headers: { authorization: `Key ${admin}` } });
  const listed = ((await r.json()) as { keys: Array<{ id: string; expired?: boolean }> }).keys;
  assert.equal(listed.find((k) => k.id === old.record.id)?.expired, true);
  assert.equal(listed.find((k) => k.id === soon.record.id)?.expired, undefined);
  const call = await fetch(`${base}/local/chat/api/tags`, { headers: { authorization: `Key ${old.key}` } });
  assert.equal(call.status, 401);
});

test("shutdown: new requests get 503, a running stream finishes", async () => {
  const h = { authorization: `Key ${key}`, "content-type": "application/json" };
  // A stand-in pod whose stream ends when the test says so: still running when the gateway closes, however fast or
  // slow the machine (a model's stream either ends before the close or outlasts the deadline).
  const release = Promise.withResolvers<void>();
  const pod = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write('data: {"choices":[{"index":0,"delta":{"content":"one"},"finish_reason":null}]}\n\n');
    void release.promise.then(() => res.end("data: [DONE]\n\n"));
  });
  apps.set({ org: "local", name: "held", auth: "private", uid: "5" }, [endpointAt(await listen(pod))]);
  try {
    const stream = await fetch(`${base}/local/held/v1/chat/completions`, {
      method: "POST",
      headers: h,
      body: chatBody(true, 200),
    });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    assert.match(text, /"content":"one"/, "the stream is running");
    const closing = gateway.close(10_000);
    const refused = await fetch(`${base}/local/chat/api/version`, { headers: h });
    assert.equal(refused.status, 503);
    release.resolve();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    assert.ok(text.trimEnd().endsWith("data: [DONE]"), "the running stream finished");
    await closing;
    assert.equal((await fetch(`${base}/readyz`)).status, 503);
  } finally {
    release.resolve();
    pod.closeAllConnections();
    pod.close();
  }
});
