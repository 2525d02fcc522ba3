// The gateway under the faults a stranger tries, over real sockets: slow and malformed clients, oversized requests,
// `Expect: 100-continue`, pipelining, CORS preflights, odd paths and Authorization headers, and pods that misbehave
// (a connection closed as a request goes out, no answer, an answer cut mid-stream, a killed `gantry serve`, a huge
// answer to a client that does not read). In-process gateway (memory seams, the server of http-server.ts) in front of
// stand-in pods, and of a real `gantry serve` for the killed pod.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer } from "../../support/server.ts";

const MAX_BODY = 4096;
const apps = new StaticApps(),
  keys = new MemoryKeys();
let gateway: Gateway, server: http.Server, port: number, base: string, key: string;
const pods: net.Server[] = [];

const listen = async (s: net.Server): Promise<number> => {
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  return (s.address() as net.AddressInfo).port;
};

/** A stand-in pod (an http or a raw net server) behind public app `o/<name>`. */
async function pod(name: string, s: net.Server): Promise<void> {
  pods.push(s);
  apps.set({ org: "o", name, auth: "public", uid: name }, [endpointAt(`http://127.0.0.1:${await listen(s)}`)]);
}

const echo = () =>
  http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const text = JSON.stringify({ method: req.method, url: req.url, body });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
  });

before(async () => {
  const config = parseGatewayConfig({
    maxBodyBytes: MAX_BODY,
    clientTimeouts: { headersSeconds: 1, requestSeconds: 2 },
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 1 },
    upstream: { headersTimeoutSeconds: 1, retrySeconds: 2 },
  });
  gateway = new Gateway({ config, apps, keys, logger: silentLogger });
  server = createGatewayServer(config, gateway.handle);
  port = await listen(server);
  base = `http://127.0.0.1:${port}`;
  key = (await keys.create("o", { scope: "api" })).key;
  await pod("echo", echo());
  apps.set({ org: "o", name: "private", auth: "private", uid: "private" }, apps.endpoints("o", "echo").slice());
});

after(async () => {
  server?.closeAllConnections();
  server?.close();
  await gateway?.close(0);
  for (const s of pods) {
    if (s instanceof http.Server) s.closeAllConnections();
    s.close();
  }
});

/** Writes `parts` to a raw connection to the gateway (a function part waits for what was received so far). */
async function raw(
  parts: Array<string | Buffer | ((received: string) => boolean)>,
): Promise<{ text: () => string; closed: Promise<string>; socket: net.Socket }> {
  const socket = net.connect(port, "127.0.0.1");
  let text = "";
  const waiters: Array<() => void> = [];
  socket.on("data", (d: Buffer) => {
    text += d.toString("latin1");
    for (const w of waiters.splice(0)) w();
  });
  socket.on("error", () => undefined);
  const closed = new Promise<string>((r) => socket.once("close", () => r(text)));
  await new Promise<void>((r) => socket.once("connect", () => r()));
  for (const p of parts) {
    if (typeof p === "function")
      while (!p(text)) {
        if (socket.destroyed) throw new Error(`connection closed; received ${JSON.stringify(text)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          socket.once("close", r);
        });
      }
    else socket.write(p);
  }
  return { text: () => text, closed, socket };
}

/** Status lines and JSON bodies of the raw answers in `text`. */
const statuses = (text: string): number[] => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.lastIndexOf("\r\n\r\n") + 4));

test("a client that sends headers and then stalls (headers or body) gets 408 in the API's shape and is disconnected", async () => {
  const headers = await raw(["POST /o/echo/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"]);
  const got = await headers.closed;
  assert.deepEqual(statuses(got), [408]);
  assert.match(JSON.stringify(bodyOf(got)), /not received in time/, "a JSON error (no path yet to choose its shape)");
  const body = await raw([`POST /o/echo/api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"model":`]);
  const got2 = await body.closed;
  assert.deepEqual(statuses(got2), [408]);
  assert.equal(typeof (bodyOf(got2) as { error: string }).error, "string", "Ollama's shape under /api");
  // An answer may take longer than a request may take to arrive: only receiving the request is bounded.
  const ok = await fetch(`${base}/o/echo/api/chat`, { method: "POST", body: "{}" });
  assert.equal(ok.status, 200);
});

test("headers too large: 431 in the API's shape with a request id, malformed requests 400, never an empty answer", async () => {
  for (const [path, shape] of [
    ["/o/echo/v1/models", "openai"],
    ["/o/echo/api/tags", "ollama"],
  ] as const) {
    const c = await raw([`GET ${path}?q=${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`]);
    const got = await c.closed;
    assert.deepEqual(statuses(got), [431], path);
    assert.match(got, /\r\nX-Request-Id: [0-9a-f]{32}\r\n/i, "an id to quote when reporting it");
    const e = (bodyOf(got) as { error: unknown }).error;
    assert.equal(shape === "openai" ? typeof (e as { message: string }).message : typeof e, "string", path);
  }
  const bad = await raw(["GET /o/echo/api/tags HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"]);
  assert.deepEqual(statuses(await bad.closed), [400]);
  assert.match((bodyOf(bad.text()) as { error: string }).error, /malformed HTTP request/);
});

test("bodies: chunked over maxBodyBytes is 413 in the API's shape and the connection closes; chunked within is passed", async () => {
  const head = "POST /o/echo/v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
  const big = await raw([head, chunk("x".repeat(3000)), chunk("y".repeat(3000))]);
  const got = await big.closed;
  assert.deepEqual(statuses(got), [413]);
  assert.equal((bodyOf(got) as { error: { code: string } }).error.code, "payload_too_large");
  const small = await raw([head, chunk('{"a":'), chunk("1}"), "0\r\n\r\n", (t) => t.includes('"}')]);
  small.socket.destroy();
  assert.deepEqual(statuses(small.text()), [200]);
  assert.equal((bodyOf(small.text()) as { body: string }).body, '{"a":1}');
});

test("Expect: 100-continue: 100 only once the body is wanted; a refused request is answered before its upload", async () => {
  const head = (path: string, length: number, auth = "") =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${length}\r\n${auth}\r\n`;
  // A private app without a key: 401 at once, no 100, and the connection closes (the body was never sent).
  const refused = await raw([head("/o/private/v1/chat/completions", 2000)]);
  const got = await refused.closed;
  assert.deepEqual(statuses(got), [401]);
  assert.ok(!got.includes("100 Continue"));
  const tooBig = await raw([head("/o/echo/api/chat", MAX_BODY + 1)]);
  assert.deepEqual(statuses(await tooBig.closed), [413]);
  // A good request gets 100, sends its body, gets its answer, and the connection stays usable.
  const body = JSON.stringify({ x: "y".repeat(1500) });
  const ok = await raw([
    head("/o/private/api/chat", body.length, `Authorization: Key ${key}\r\n`),
    (t) => t.startsWith("HTTP/1.1 100 Continue\r\n\r\n"),
    body,
    (t) => t.includes('"}'),
    "GET /o/echo/api/tags HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  ]);
  await ok.closed;
  assert.deepEqual(statuses(ok.text()), [100, 200, 200]);
});

test("pipelined requests on one connection are answered in order; HTTP/1.0 and Connection: close end the connection", async () => {
  const c = await raw([
    "GET /o/echo/api/tags?n=1 HTTP/1.1\r\nHost: x\r\n\r\n" +
      "GET /o/nope/api/tags HTTP/1.1\r\nHost: x\r\n\r\n" +
      "POST /o/echo/api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" +
      "GET /o/echo/api/tags?n=4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  ]);
  const got = await c.closed;
  assert.deepEqual(statuses(got), [200, 404, 200, 200]);
  assert.ok(got.indexOf("?n=1") < got.indexOf('"body":"{}"') && got.indexOf('"body":"{}"') < got.indexOf("?n=4"));
  const old = await raw(["GET /o/echo/api/tags HTTP/1.0\r\n\r\n"]);
  assert.deepEqual(statuses(await old.closed), [200]);
});

test("CORS: a browser's preflight is answered for any origin; answers (proxied and the gateway's own) carry the headers", async () => {
  const origin = "https://chat.example.com";
  const pre = await fetch(`${base}/o/private/v1/chat/completions`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, x-stainless-os",
    },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get("access-control-allow-origin"), origin);
  assert.match(pre.headers.get("access-control-allow-headers") ?? "", /authorization/);
  assert.match(pre.headers.get("access-control-allow-methods") ?? "", /POST/);
  const proxied = await fetch(`${base}/o/private/v1/models`, { headers: { origin, authorization: `Key ${key}` } });
  assert.equal(proxied.status, 200);
  assert.equal(proxied.headers.get("access-control-allow-origin"), origin);
  assert.match(proxied.headers.get("access-control-expose-headers") ?? "", /x-request-id/);
  const refused = await fetch(`${base}/o/private/v1/models`, { headers: { origin } });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("access-control-allow-origin"), origin, "a browser may read the 401");
  const mgmt = await fetch(`${base}/_gantry/v1/orgs/o/keys`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "DELETE" },
  });
  assert.equal(mgmt.status, 204);
  // Without an Origin header an OPTIONS is no preflight: the route says which methods it has.
  const plain = await fetch(`${base}/o/echo/v1/chat/completions`, { method: "OPTIONS" });
  assert.equal(plain.status, 405);
  assert.equal(plain.headers.get("allow"), "POST");
});

test("paths: errors in the shape of the API the path names; a malformed percent-encoding never reaches a pod", async () => {
  const get = async (path: string) => {
    const c = await raw([`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]);
    const text = await c.closed;
    return { status: statuses(text)[0], body: bodyOf(text) as { error: unknown } };
  };
  for (const path of ["/o%2Fecho/v1/models", "/O/echo/v1/models", "//o/echo/v1/models"]) {
    const r = await get(path);
    assert.equal(r.status, 404, path);
    assert.equal(typeof (r.body.error as { message: string }).message, "string", `${path}: the OpenAI envelope`);
  }
  const bad = await get("/o/echo/v1/models/%ff");
  assert.equal(bad.status, 400);
  assert.equal((bad.body.error as { type: string }).type, "invalid_request_error");
  const dots = await get("/o/echo/../../_gantry/v1/orgs/o/keys");
  assert.equal(dots.status, 400);
  const id = await get("/o/echo/v1/models/hf.co/org/repo:Q4_K_M?x=1");
  assert.equal((id.body as unknown as { url: string }).url, "/v1/models/hf.co/org/repo:Q4_K_M?x=1");
  const head = await raw(["HEAD /o/echo/v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]);
  const h = await head.closed;
  assert.deepEqual(statuses(h), [200]);
  assert.ok(h.endsWith("\r\n\r\n"), "no body after a HEAD answer");
});

test("Authorization: tabs after the scheme pass; two Authorization headers are refused, whichever comes first", async () => {
  const get = (auth: string[]) =>
    raw([`GET /o/private/api/tags HTTP/1.1\r\nHost: x\r\n${auth.map((a) => `Authorization: ${a}\r\n`).join("")}\r\n`]);
  const tab = await get([`Key\t${key}`]);
  await new Promise<void>((r) => tab.socket.once("data", () => r()));
  assert.deepEqual(statuses(tab.text()), [200]);
  tab.socket.destroy();
  for (const pair of [
    [`Key ${key}`, "Key 0123456789abcdef:nope"],
    ["Key 0123456789abcdef:nope", `Key ${key}`],
  ]) {
    const c = await get(pair);
    await new Promise<void>((r) => c.socket.once("data", () => r()));
    assert.deepEqual(statuses(c.text()), [401], pair.join(" + "));
    c.socket.destroy();
  }
});

test("a pod that closes a kept-alive connection just as the next request arrives: the request is sent again", async () => {
  // Answers the first request of each connection, then closes the connection when the next one arrives (a pod's
  // keep-alive timeout or shutdown racing the gateway's reuse of the connection).
  await pod(
    "racer",
    net.createServer((s) => {
      let seen = 0,
        buf = "";
      s.on("data", (d: Buffer) => {
        buf += d.toString("latin1");
        if (!buf.includes("\r\n\r\n")) return;
        buf = "";
        if (seen++ === 0)
          s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}');
        else s.destroy();
      });
    }),
  );
  for (const init of [{}, { method: "POST", body: "{}" }]) {
    const path = init.method ? "/api/chat" : "/api/tags";
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/o/racer${path}`, init);
      assert.equal(r.status, 200, `${path} #${i}: ${await r.clone().text()}`);
      assert.deepEqual(await r.json(), { ok: true });
    }
  }
});

test("a pod killed with the request sent and no answer yet: the request goes to another pod, once", async () => {
  // Reads each request and resets the connection (RST) without a byte of answer: `gantry serve` killed (kill -9, OOM)
  // just as a request reached it, a fresh connection, not a stale kept-alive one.
  let hits = 0;
  const killed = () =>
    net.createServer((s) => {
      let buf = "";
      s.on("data", (d: Buffer) => {
        buf += d.toString("latin1");
        if (!buf.includes("\r\n\r\n")) return;
        hits++;
        s.resetAndDestroy();
      });
    });
  const k1 = killed(),
    k2 = killed(),
    good = echo();
  pods.push(k1, k2, good);
  const [p1, p2, pg] = [await listen(k1), await listen(k2), await listen(good)];
  apps.set({ org: "o", name: "crashing", auth: "public", uid: "crashing" }, [
    endpointAt(`http://127.0.0.1:${p1}`),
    endpointAt(`http://127.0.0.1:${pg}`),
  ]);
  for (let i = 0; i < 4; i++) {
    const r = await fetch(`${base}/o/crashing/api/chat`, { method: "POST", body: '{"i":1}' });
    assert.equal(r.status, 200, `#${i}: ${await r.clone().text()}`);
    assert.equal(((await r.json()) as { body: string }).body, '{"i":1}');
  }
  assert.ok(hits >= 1, "the killed pod got a request");
  // Every pod resets: one more attempt, then 502 in the API's shape (a request that kills pods takes at most two).
  apps.set({ org: "o", name: "all-crashing", auth: "public", uid: "all-crashing" }, [
    endpointAt(`http://127.0.0.1:${p1}`),
    endpointAt(`http://127.0.0.1:${p2}`),
  ]);
  hits = 0;
  const r = await fetch(`${base}/o/all-crashing/v1/chat/completions`, { method: "POST", body: "{}" });
  assert.equal(r.status, 502);
  assert.match(((await r.json()) as { error: { message: string } }).error.message, /broke off/);
  assert.equal(hits, 2);
});

test("a pod's header value with a bare CR or LF is never passed on: the client gets 502 in the API's shape", async () => {
  for (const bad of ["\n", "\r"]) {
    const name = bad === "\n" ? "lf" : "cr";
    await pod(
      `injector-${name}`,
      net.createServer((s) =>
        s.once("data", () => s.write(`HTTP/1.1 200 OK\r\nx-a: 1${bad}x-injected: yes\r\ncontent-length: 2\r\n\r\n{}`)),
      ),
    );
    const r = await fetch(`${base}/o/injector-${name}/v1/models`, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, 502, name);
    assert.equal(r.headers.get("x-injected"), null, name);
    assert.equal(((await r.json()) as { error: { type: string } }).error.type, "server_error", name);
  }
});

test("a pod that does not answer within upstream.headersTimeoutSeconds: 504 in the API's shape", async () => {
  await pod(
    "silent",
    http.createServer((req) => req.resume()),
  );
  const r = await fetch(`${base}/o/silent/v1/models`);
  assert.equal(r.status, 504);
  assert.equal(((await r.json()) as { error: { type: string } }).error.type, "server_error");
});

test("an answer cut mid-stream ends with an error event: the openai SDK throws, NDJSON gets an error line", async () => {
  const chunk = (c: string) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: c }, finish_reason: null }] })}\n\n`;
  await pod(
    "cut",
    http.createServer((req, res) => {
      req.resume();
      const sse = req.url === "/v1/chat/completions";
      res.writeHead(200, { "content-type": sse ? "text/event-stream" : "application/x-ndjson" });
      res.write(sse ? chunk("one") : '{"model":"m","response":"one","done":false}\n', () => res.socket?.destroy());
    }),
  );
  const openai = new OpenAI({ baseURL: `${base}/o/cut/v1`, apiKey: "unused", maxRetries: 0 });
  const stream = await openai.chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
  });
  let text = "";
  await assert.rejects(async () => {
    for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
  }, /broke off/);
  assert.equal(text, "one");
  const r = await fetch(`${base}/o/cut/api/generate`, { method: "POST", body: '{"model":"m","prompt":"x"}' });
  const lines = (await r.text()).trim().split("\n");
  assert.equal(lines.length, 2);
  assert.match((JSON.parse(lines[1]!) as { error: string }).error, /broke off/);
  const ollama = new Ollama({ host: `${base}/o/cut` });
  await assert.rejects(async () => {
    for await (const _ of await ollama.generate({ model: "m", prompt: "x", stream: true }));
  }, /broke off/);
});

test("a huge answer to a client that does not read: the gateway buffers a bounded amount (backpressure to the pod)", async () => {
  let written = 0;
  const block = Buffer.alloc(64 * 1024, 97);
  await pod(
    "huge",
    http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      const more = () => {
        while (written < 256 * 2 ** 20) {
          written += block.length;
          if (!res.write(block)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
      res.on("close", () => undefined);
    }),
  );
  const c = await raw(["GET /o/huge/api/tags HTTP/1.1\r\nHost: x\r\n\r\n", (t) => t.includes("\r\n\r\n")]);
  c.socket.pause();
  // Until the pod's writes stop: the gateway passes on no more than socket buffers hold while the client reads nothing.
  for (let last = -1; written !== last;) {
    last = written;
    await new Promise((r) => setTimeout(r, 500));
  }
  c.socket.destroy();
  assert.ok(written < 64 * 2 ** 20, `the pod wrote ${written >> 20} MiB into a client that read nothing`);
});

test("the openai SDK honours the gateway's 429 Retry-After and its retry then succeeds", async () => {
  const release = Promise.withResolvers<void>();
  let requests = 0;
  const list = JSON.stringify({ object: "list", data: [{ id: "m", object: "model", created: 1, owned_by: "x" }] });
  await pod(
    "slow",
    http.createServer((req, res) => {
      requests++;
      req.resume();
      // The head at once (the gateway's headers timeout is short here), the body when the test says.
      res.writeHead(200, { "content-type": "application/json", "content-length": list.length });
      res.flushHeaders();
      void release.promise.then(() => res.end(list));
    }),
  );
  apps.set({ org: "o", name: "slow-private", auth: "private", uid: "sp" }, apps.endpoints("o", "slow").slice());
  const h = { authorization: `Key ${key}` };
  // The key's one concurrent request is taken by a held answer until the SDK got its 429.
  const first = fetch(`${base}/o/slow-private/v1/models`, { headers: h });
  while (requests === 0) await new Promise((r) => setTimeout(r, 10));
  const seen: number[] = [];
  const openai = new OpenAI({
    baseURL: `${base}/o/slow-private/v1`,
    apiKey: key,
    maxRetries: 2,
    fetch: async (url: string | URL | Request, init?: RequestInit) => {
      const r = await fetch(url, init);
      seen.push(r.status);
      if (r.status === 429) {
        assert.equal(r.headers.get("retry-after"), "1");
        release.resolve();
      }
      return r;
    },
  });
  const listed = openai.models.list();
  const firstAnswer = await first;
  assert.equal(firstAnswer.status, 200);
  await firstAnswer.text();
  const page = await listed;
  assert.equal(page.data[0]?.id, "m");
  assert.equal(seen[0], 429);
  assert.equal(seen.at(-1), 200);
});

test("a real `gantry serve` killed mid-stream: the openai SDK's stream fails with the gateway's error event, no hang", async () => {
  const upstream = await startTestServer({ env: { GANTRY_CONTEXT_LENGTH: "131072" } });
  try {
    await createModel(upstream.url, "tiny", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }));
    // Loaded first (an empty prompt loads the model): the answer's head must come within this gateway's 1 s.
    assert.equal(
      (await fetch(`${upstream.url}/api/generate`, { method: "POST", body: '{"model":"tiny"}' })).status,
      200,
    );
    apps.set({ org: "o", name: "real", auth: "public", uid: "real" }, [endpointAt(upstream.url)]);
    const openai = new OpenAI({ baseURL: `${base}/o/real/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: "tiny",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 100_000,
      stream: true,
    });
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const _ of stream) if (++chunks === 3) upstream.proc.kill("SIGKILL");
    }, /broke off/);
    assert.ok(chunks >= 3);
  } finally {
    await upstream.stop();
  }
});
