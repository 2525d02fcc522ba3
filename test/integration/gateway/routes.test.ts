// The route table (server/gateway/routes.ts) walked, route by route, through the in-process gateway to a real
// `gantry serve` on the tiny model: each route answers, another method is 405, the gateway's own errors (no key, a
// body nested past the depth limit) come in the route's shape, usage is metered where the table says, every route
// that streams gets keep-alive lines while its app scales from zero (read by the real openai, Anthropic and ollama
// clients), and PrefixHash routes by the keys clients send (prompt_cache_key, then x-session-id, then user).
import assert from "node:assert/strict";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, MemoryUsage, StaticApps } from "../../../server/gateway/memory.ts";
import type { AppInfo, Endpoint } from "../../../server/gateway/ports.ts";
import { API_ROUTES, MAX_BODY_DEPTH, type ApiRoute } from "../../../server/gateway/routes.ts";
import type { ErrorShape } from "../../../server/gateway/errors.ts";
import { rerankerModelPath, tinyModelPath } from "../../support/models.ts";
import { sumMetric } from "../../support/operator.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let upstream: TestServer, gateway: Gateway, server: http.Server, base: string;
const apps = new StaticApps(),
  keys = new MemoryKeys(),
  usage = new MemoryUsage();

before(async () => {
  upstream = await startTestServer({ env: { GANTRY_NUM_PARALLEL: "4" } });
  await createModel(upstream.url, "tiny", await tinyModelPath());
  await createModel(upstream.url, "ranker", await rerankerModelPath());
  apps.set({ org: "local", name: "warm", auth: "private", uid: "1" }, [endpointAt(upstream.url)]);
  const config = parseGatewayConfig({
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 },
    hold: { timeoutSeconds: 60, maxPerApp: 16, keepAliveSeconds: 1 },
  });
  gateway = new Gateway({ config, apps, keys, usage, logger: silentLogger });
  server = createGatewayServer(config, gateway.handle);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server?.closeAllConnections();
  server?.close();
  await gateway?.close(0);
  await upstream?.stop();
});

const user = [{ role: "user", content: "hi" }];
/** A request each route's API accepts, answered in a few tokens. */
const SAMPLES: Record<string, Record<string, unknown> | undefined> = {
  "/v1/chat/completions": { model: "tiny", messages: user, max_tokens: 3 },
  "/v1/completions": { model: "tiny", prompt: "hi", max_tokens: 3 },
  "/v1/embeddings": { model: "tiny", input: "hi" },
  "/v1/rerank": { model: "ranker", query: "a cat", documents: ["a cat sat", "stocks fell"] },
  "/v1/reranking": { model: "ranker", query: "a cat", documents: ["a cat sat", "stocks fell"] },
  "/v1/responses": { model: "tiny", input: "hi", max_output_tokens: 3 },
  "/v1/messages": { model: "tiny", messages: user, max_tokens: 3 },
  "/v1/messages/count_tokens": { model: "tiny", messages: user },
  "/api/chat": { model: "tiny", messages: user, stream: false, options: { num_predict: 3 } },
  "/api/generate": { model: "tiny", prompt: "hi", stream: false, options: { num_predict: 3 } },
  "/api/embed": { model: "tiny", input: "hi" },
  "/api/embeddings": { model: "tiny", prompt: "hi" },
  "/api/rerank": { model: "ranker", query: "a cat", documents: ["a cat sat", "stocks fell"] },
  "/api/show": { model: "tiny" },
};
const pathOf = (r: ApiRoute) => (r.under ? `${r.path}tiny` : r.path);

/** Whether an error body is in the shape of an API: OpenAI's envelope, Anthropic's, Ollama's. */
function assertShape(shape: ErrorShape, body: unknown, what: string): void {
  const b = body as { type?: unknown; error?: { type?: unknown; message?: unknown } | string };
  if (shape === "ollama") assert.equal(typeof b.error, "string", what);
  else if (shape === "anthropic") {
    assert.equal(b.type, "error", what);
    assert.equal(typeof (b.error as { message?: unknown }).message, "string", what);
  } else {
    assert.equal(typeof (b.error as { message?: unknown }).message, "string", what);
    assert.equal(typeof (b.error as { type?: unknown }).type, "string", what);
    assert.equal(b.type, undefined, what);
  }
}

test("every route answers through the gateway, other methods get 405 in its shape, usage is metered where it says", async () => {
  for (const r of API_ROUTES) {
    const { key } = await keys.create("local", { scope: "api" });
    const url = `${base}/local/warm${pathOf(r)}`;
    const method = r.methods[0]!;
    const body = r.body === "json" ? JSON.stringify(SAMPLES[r.path]) : undefined;
    const res = await fetch(url, { method, headers: { authorization: `Key ${key}` }, ...(body ? { body } : {}) });
    assert.equal(res.status, 200, `${r.path}: ${await res.clone().text()}`);
    await res.arrayBuffer();
    gateway.flushEnded();
    const row = (await usage.query("local", 0, Date.now() + 3_600_000)).find((u) => u.keyId === key.split(":")[0]);
    assert.equal(row?.requests, 1, r.path);
    assert.equal((row?.promptTokens ?? 0) > 0, r.metered, `${r.path}: metered ${r.metered}, got ${row?.promptTokens}`);
    const other = await fetch(url, {
      method: method === "GET" ? "DELETE" : "GET",
      headers: { authorization: "Key x" },
    });
    assert.equal(other.status, 405, r.path);
    assert.equal(other.headers.get("allow"), method === "GET" ? "GET, HEAD" : "POST", r.path);
    assertShape(r.shape, await other.json(), `405 on ${r.path}`);
  }
});

/** Where each API reports a prompt's cached tokens (issue 38: on every API, also through the gateway). */
const CACHED: Record<string, string[]> = {
  "/v1/chat/completions": ["usage", "prompt_tokens_details", "cached_tokens"],
  "/v1/completions": ["usage", "prompt_tokens_details", "cached_tokens"],
  "/v1/responses": ["usage", "input_tokens_details", "cached_tokens"],
  "/v1/messages": ["usage", "cache_read_input_tokens"],
  "/api/chat": ["prompt_cached_count"],
  "/api/generate": ["prompt_cached_count"],
};
const at = (v: unknown, path: string[]): unknown =>
  path.reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), v);

test("cached prompt tokens are reported on every API that generates: the same request again finds its prompt", async () => {
  const { key } = await keys.create("local", { scope: "api" });
  for (const [path, field] of Object.entries(CACHED)) {
    const ask = async () => {
      const res = await fetch(`${base}/local/warm${path}`, {
        method: "POST",
        headers: { authorization: `Key ${key}` },
        body: JSON.stringify({ ...SAMPLES[path], temperature: 0 }),
      });
      assert.equal(res.status, 200, path);
      return (await res.json()) as unknown;
    };
    await ask();
    const cached = at(await ask(), field);
    assert.ok(typeof cached === "number" && cached > 0, `${path} reports the cached prompt tokens: ${String(cached)}`);
  }
});

test("the gateway's own errors come in each route's shape: no key 401; a body nested 100,000 deep 400", async () => {
  const { key } = await keys.create("local", { scope: "api" });
  const deep = `{"model":"tiny","messages":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
  for (const r of API_ROUTES) {
    const url = `${base}/local/warm${pathOf(r)}`;
    const method = r.methods[0]!;
    const denied = await fetch(url, { method, ...(r.body === "json" ? { body: "{}" } : {}) });
    assert.equal(denied.status, 401, r.path);
    assertShape(r.shape, await denied.json(), `401 on ${r.path}`);
    if (r.body !== "json") continue;
    const nested = await fetch(url, { method, headers: { authorization: `Key ${key}` }, body: deep });
    assert.equal(nested.status, 400, r.path);
    const error = await nested.json();
    assertShape(r.shape, error, `deep body on ${r.path}`);
    assert.match(JSON.stringify(error), new RegExp(`deeper than ${MAX_BODY_DEPTH} levels`));
  }
  // At the limit the body is the pod's to judge (here: messages that are not messages, 400 from the pod).
  const limit = `{"model":"tiny","messages":${"[".repeat(MAX_BODY_DEPTH - 1)}${"]".repeat(MAX_BODY_DEPTH - 1)}}`;
  const atLimit = await fetch(`${base}/local/warm/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Key ${key}` },
    body: limit,
  });
  assert.equal(atLimit.status, 400);
  assert.doesNotMatch(await atLimit.text(), /deeper than/);
});

/** A fetch that tells when a response's first bytes (a held stream's first keep-alive) arrived, and what they were. */
function watchedFetch(): { fetch: typeof fetch; first: Promise<string> } {
  let seen!: (s: string) => void;
  const first = new Promise<string>((r) => (seen = r));
  const wrapped: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!res.body) return res;
    const [mine, theirs] = res.body.tee();
    void (async () => {
      const reader = mine.getReader();
      const chunk = await reader.read();
      seen(chunk.done ? "" : new TextDecoder().decode(chunk.value));
      await reader.cancel();
    })();
    return new Response(theirs, { status: res.status, headers: res.headers });
  };
  return { fetch: wrapped, first };
}

test("every route that streams gets keep-alive lines while its app scales from zero; each API's client reads on", async () => {
  const cold = { org: "local", name: "cold", auth: "public", uid: "2" } satisfies AppInfo;
  apps.set(cold, []);
  const url = `${base}/local/cold`;
  const streams: Record<string, (f: typeof fetch) => Promise<string>> = {
    "/v1/chat/completions": async (f) => {
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", fetch: f });
      const s = await openai.chat.completions.create({
        model: "tiny",
        messages: [user[0] as never],
        max_tokens: 3,
        stream: true,
      });
      let finish = "";
      for await (const c of s) finish = c.choices[0]?.finish_reason ?? finish;
      return finish;
    },
    "/v1/completions": async (f) => {
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", fetch: f });
      const s = await openai.completions.create({ model: "tiny", prompt: "hi", max_tokens: 3, stream: true });
      let finish = "";
      for await (const c of s) finish = c.choices[0]?.finish_reason ?? finish;
      return finish;
    },
    "/v1/responses": async (f) => {
      const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", fetch: f });
      const s = await openai.responses.create({ model: "tiny", input: "hi", max_output_tokens: 3, stream: true });
      let end = "";
      for await (const e of s) if (e.type === "response.completed" || e.type === "response.incomplete") end = e.type;
      return end;
    },
    "/v1/messages": async (f) => {
      const anthropic = new Anthropic({ baseURL: url, apiKey: "none", fetch: f });
      const s = await anthropic.messages.create({
        model: "tiny",
        max_tokens: 3,
        messages: [user[0] as never],
        stream: true,
      });
      let stop = "";
      for await (const e of s) if (e.type === "message_delta") stop = e.delta.stop_reason ?? "";
      return stop;
    },
    "/api/chat": async (f) => {
      const ollama = new Ollama({ host: url, fetch: f });
      const s = await ollama.chat({ model: "tiny", messages: user, stream: true, options: { num_predict: 3 } });
      let last = "";
      for await (const c of s) last = c.done ? (c.done_reason ?? "done") : last;
      return last;
    },
    "/api/generate": async (f) => {
      const ollama = new Ollama({ host: url, fetch: f });
      const s = await ollama.generate({ model: "tiny", prompt: "hi", stream: true, options: { num_predict: 3 } });
      let last = "";
      for await (const c of s) last = c.done ? (c.done_reason ?? "done") : last;
      return last;
    },
  };
  const streaming = API_ROUTES.filter((r) => r.stream);
  assert.deepEqual(
    streaming.map((r) => r.path).sort(),
    Object.keys(streams).sort(),
    "a client for every route that streams",
  );
  const runs = streaming.map((r) => {
    const w = watchedFetch();
    return { r, first: w.first, done: streams[r.path]!(w.fetch) };
  });
  const firsts = await Promise.all(runs.map((x) => x.first));
  for (const [i, { r }] of runs.entries()) {
    if (r.stream!.kind === "sse") assert.ok(firsts[i]!.startsWith(": warming up\n\n"), r.path);
    else assert.equal((JSON.parse(firsts[i]!.split("\n")[0]!) as { done: boolean }).done, false, r.path);
  }
  apps.set(cold, [endpointAt(upstream.url)]); // the app's pod is ready: the held streams go on
  for (const [i, ended] of (await Promise.all(runs.map((x) => x.done))).entries())
    assert.ok(ended.length > 0, `${runs[i]!.r.path} ended with its last event`);
});

test("PrefixHash: a key the client sends routes the conversation (prompt_cache_key, then x-session-id, then user)", async () => {
  const pod = (name: string): Endpoint => ({ ...endpointAt(upstream.url), id: name, pod: name });
  const app = {
    org: "local",
    name: "ring",
    auth: "public",
    uid: "3",
    loadBalancing: {
      strategy: "PrefixHash",
      prefixHash: { meanLoadFactor: 125, replication: 256, prefixCharLength: 100 },
    },
  } satisfies AppInfo;
  apps.set(app, ["a", "b", "c"].map(pod));
  const openai = new OpenAI({ baseURL: `${base}/local/ring/v1`, apiKey: "none" });
  /** Sends 12 conversations that differ from their first word on, keyed as `given` says; the pods they went to. */
  const podsFor = async (given: (i: number) => { body?: Record<string, string>; session?: string }) => {
    const before = await (await fetch(`${base}/metrics`)).text();
    for (let i = 0; i < 12; i++) {
      const g = given(i);
      await openai.chat.completions.create(
        { model: "tiny", messages: [{ role: "user", content: `topic ${i}` }], max_tokens: 1, ...g.body },
        g.session ? { headers: { "x-session-id": g.session } } : {},
      );
    }
    const now = await (await fetch(`${base}/metrics`)).text();
    const count = (t: string, p: string) => sumMetric(t, "gantry_gateway_pod_requests_total", { app: "ring", pod: p });
    return ["a", "b", "c"].filter((p) => count(now, p) > count(before, p));
  };
  assert.ok((await podsFor(() => ({}))).length > 1, "without a key, conversations spread by their start");
  assert.equal((await podsFor(() => ({ body: { prompt_cache_key: "conv-1" } }))).length, 1, "prompt_cache_key");
  assert.equal((await podsFor(() => ({ session: "sess-1" }))).length, 1, "x-session-id");
  assert.equal((await podsFor(() => ({ body: { user: "user-1" } }))).length, 1, "user");
  // Precedence: prompt_cache_key over x-session-id over user.
  const first = (i: number) => ({ body: { prompt_cache_key: "conv-2", user: `u${i}` }, session: `s${i}` });
  assert.equal((await podsFor(first)).length, 1, "prompt_cache_key wins");
  assert.equal((await podsFor((i) => ({ body: { user: `u${i}` }, session: "sess-2" }))).length, 1, "then x-session-id");
});
