// Hostile input at the gateway's front door, over raw sockets: request smuggling, malformed fields and chunks, odd
// targets and paths, pipelining tricks, slow and silent clients, oversize parts. Each case of CASES is one line: the
// bytes sent, the statuses answered in order, whether the gateway then closes the connection, and what each pod
// behind it saw (its request log: nothing, unless the case says so). Every pod request is also checked against what a
// pod must never see (a caller's key, a client's Host, a trailer field, a dot segment). Then the clients that hold the
// gateway's memory or connections: one that pipelines hundreds of requests and reads nothing, a thousand idle
// connections, more connections from one address than it may hold. (A client that stops reading a stream: faults.)
// Last, forwarded headers: believed from the proxies of trustProxy only, for the pods, the access log and the console's
// sign-in throttle.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import { createLogger, silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, StaticApps } from "../../../server/gateway/memory.ts";
import { Conn, within } from "../../support/raw-http.ts";

const MAX_BODY = 4096;
/** The pods: a public app and a private one of org o, a private app of org p. */
type PodName = "pub" | "priv" | "other";
interface Seen {
  line: string;
  headers: http.IncomingHttpHeaders;
}
const seen: Record<PodName, Seen[]> = { pub: [], priv: [], other: [] };
const podHosts: Record<string, string> = {};
const servers: net.Server[] = [];
let gateway: Gateway, port: number, key: string;
const apps = new StaticApps(),
  keys = new MemoryKeys();

const listen = async (s: net.Server, host = "127.0.0.1"): Promise<number> => {
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  return (s.address() as net.AddressInfo).port;
};

/** A pod that logs what it gets: `GET /v1/models` (with ` <body>` when there is one). `?bytes=n` answers n bytes. */
function pod(name: PodName): http.Server {
  return http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("latin1")));
    req.on("end", () => {
      seen[name].push({ line: `${req.method} ${req.url}${body ? ` ${body}` : ""}`, headers: req.headers });
      const size = Number(new URL(req.url ?? "/", "http://x").searchParams.get("bytes") ?? 0);
      const text = size ? "x".repeat(size) : JSON.stringify({ pod: name });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
  });
}

before(async () => {
  for (const [name, org, app, auth] of [
    ["pub", "o", "pub", "public"],
    ["priv", "o", "priv", "private"],
    ["other", "p", "priv", "private"],
  ] as const) {
    const p = await listen(pod(name));
    podHosts[name] = `127.0.0.1:${p}`;
    apps.set({ org, name: app, auth, uid: name }, [endpointAt(`http://127.0.0.1:${p}`)]);
  }
  // Short client timeouts, so that the slow cases end in a second or two.
  const config = parseGatewayConfig({
    maxBodyBytes: MAX_BODY,
    clientTimeouts: { headersSeconds: 1, requestSeconds: 2, keepAliveSeconds: 5 },
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 },
  });
  gateway = new Gateway({ config, apps, keys, logger: silentLogger });
  port = await listen(createGatewayServer(config, gateway.handle));
  key = (await keys.create("o", { scope: "admin" })).key;
});

after(async () => {
  for (const s of servers) {
    if (s instanceof http.Server) s.closeAllConnections();
    s.close();
  }
  await gateway?.close(0);
});

// ---- The table ----

/** A request: its line, fields (`KEY` stands for the key of org o) and raw body, exactly as written. */
const r = (line: string, fields: string[] = [], body = "") =>
  `${line} HTTP/1.1\r\nHost: x\r\n${fields.map((f) => `${f}\r\n`).join("")}\r\n${body}`;
const K = "Authorization: Key KEY";
/** A chunked POST to the public app with this body after its head. */
const chunked = (body: string, fields: string[] = []) =>
  r("POST /o/pub/api/chat", ["Transfer-Encoding: chunked", ...fields], body);
/** What a smuggler appends: a request for the private app without a key. */
const SMUGGLED = "GET /o/priv/v1/models HTTP/1.1\r\nHost: x\r\n\r\n";

interface Case {
  name: string;
  bytes: string;
  answers: number[];
  then: "close" | "open";
  pods?: Partial<Record<PodName, string[]>>;
  /** Sends the bytes one at a time, this many ms apart (a slowloris client), until the gateway closes. */
  drip?: number;
}
const c = (name: string, bytes: string, answers: number[], then: Case["then"], pods?: Case["pods"]): Case => ({
  name,
  bytes,
  answers,
  then,
  ...(pods ? { pods } : {}),
});

// One line per case (prettier leaves the table alone).
// prettier-ignore
const CASES: Case[] = [
  // Request smuggling
  c("Content-Length and Transfer-Encoding", r("POST /o/pub/api/chat", ["Content-Length: 40", "Transfer-Encoding: chunked"], "0\r\n\r\n" + SMUGGLED), [400], "close"),
  c("Transfer-Encoding and Content-Length", r("POST /o/pub/api/chat", ["Transfer-Encoding: chunked", "Content-Length: 5"], "0\r\n\r\n" + SMUGGLED), [400], "close"),
  c("two different Content-Lengths", r("POST /o/pub/api/chat", ["Content-Length: 2", "Content-Length: 48"], "{}" + SMUGGLED), [400], "close"),
  c("two equal Content-Lengths", r("POST /o/pub/api/chat", ["Content-Length: 2", "Content-Length: 2"], "{}"), [400], "close"),
  c("a Content-Length list", r("POST /o/pub/api/chat", ["Content-Length: 2, 2"], "{}"), [400], "close"),
  c("a signed Content-Length", r("POST /o/pub/api/chat", ["Content-Length: +2"], "{}"), [400], "close"),
  c("a hex Content-Length", r("POST /o/pub/api/chat", ["Content-Length: 0x2"], "{}"), [400], "close"),
  c("Transfer-Encoding: xchunked", r("POST /o/pub/api/chat", ["Transfer-Encoding: xchunked"], "0\r\n\r\n"), [400], "close"),
  c("Transfer-Encoding: chunked, then identity", r("POST /o/pub/api/chat", ["Transfer-Encoding: chunked", "Transfer-Encoding: identity"], "0\r\n\r\n"), [400], "close"),
  c("Transfer-Encoding: chunked with a no-break space after", r("POST /o/pub/api/chat", ["Transfer-Encoding: chunked\xa0"], "0\r\n\r\n"), [400], "close"),
  c("Transfer-Encoding: chunked with a no-break space before", r("POST /o/pub/api/chat", ["Transfer-Encoding: \xa0chunked"], "0\r\n\r\n"), [400], "close"),
  c("Transfer-Encoding with a vertical tab", r("POST /o/pub/api/chat", ["Transfer-Encoding:\x0bchunked"], "0\r\n\r\n"), [400], "close"),
  c("Transfer-Encoding with a space before its colon", r("POST /o/pub/api/chat", ["Transfer-Encoding : chunked"], "0\r\n\r\n"), [400], "close"),
  c("a GET with Transfer-Encoding: gzip", r("GET /o/pub/api/version", ["Transfer-Encoding: gzip"], "abc"), [400], "close"),
  c("Transfer-Encoding: CHUNKED (valid: codings are case-insensitive)", chunked("2\r\n{}\r\n0\r\n\r\n").replace("chunked", "CHUNKED"), [200], "open", { pub: ["POST /api/chat {}"] }),
  // Chunks
  c("a chunk size that is not hex", chunked("zz\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a negative chunk size", chunked("-2\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a 0x chunk size", chunked("0x2\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a space after the chunk size", chunked("2 \r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a space before the chunk size", chunked(" 2\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a tab after the chunk size", chunked("2\t\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a bare CR after the chunk size", chunked("2\r{}\r\n0\r\n\r\n"), [400], "close"),
  c("a bare LF after the chunk size", chunked("2\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a chunk size past 64 bits", chunked("10000000000000002\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a control character in a chunk extension", chunked("2;\x01\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("a NUL in a chunk extension", chunked("2;a=\0\r\n{}\r\n0\r\n\r\n"), [400], "close"),
  c("chunk data longer than its size", chunked("2\r\n{}xx\r\n0\r\n\r\n" + SMUGGLED), [400], "close"),
  c("chunk extensions over 16 KiB", chunked(`2;${"a".repeat(20_000)}\r\n{}\r\n0\r\n\r\n`), [413], "close"),
  c("a trailer with a space before its colon", chunked("2\r\n{}\r\n0\r\nX-T : 1\r\n\r\n"), [400], "close"),
  c("an obs-folded trailer", chunked("2\r\n{}\r\n0\r\nX-T: 1\r\n folded\r\n\r\n"), [400], "close"),
  c("a NUL in a trailer", chunked("2\r\n{}\r\n0\r\nX-T: a\0b\r\n\r\n"), [400], "close"),
  c("trailers over 16 KiB", chunked(`2\r\n{}\r\n0\r\n${"X-T: t\r\n".repeat(3000)}\r\n`), [431], "close"),
  c("a Content-Length trailer", chunked("2\r\n{}\r\n0\r\nContent-Length: 48\r\n\r\n" + SMUGGLED), [400], "close"),
  c("trailer fields never reach the pod", chunked("2\r\n{}\r\n0\r\nX-Smuggled: 1\r\n\r\n"), [200], "open", {pub: ["POST /api/chat {}"],}),
  // Header fields
  c("obs-fold", r("GET /o/pub/api/version", ["X-A: 1", " folded"]), [400], "close"),
  c("a space before a colon", r("GET /o/pub/api/version", ["X-A : 1"]), [400], "close"),
  c("a tab before a colon", r("GET /o/pub/api/version", ["X-A\t: 1"]), [400], "close"),
  c("a NUL in a field value", r("GET /o/pub/api/version", ["X-A: 1\0"]), [400], "close"),
  c("a NUL in a field name", r("GET /o/pub/api/version", ["X-\0A: 1"]), [400], "close"),
  c("a bare CR in a field value", r("GET /o/pub/api/version", ["X-A: 1\rX-Smuggled: 1"]), [400], "close"),
  c("a bare LF in a field value", r("GET /o/pub/api/version", ["X-A: 1\nX-Smuggled: 1"]), [400], "close"),
  c("bare LF line endings", "GET /o/pub/api/version HTTP/1.1\nHost: x\n\n", [400], "close"),
  c("an empty field name", r("GET /o/pub/api/version", [": 1"]), [400], "close"),
  c("a space inside a field name", r("GET /o/pub/api/version", ["X A: 1"]), [400], "close"),
  c("no Host in HTTP/1.1", "GET /o/pub/api/version HTTP/1.1\r\n\r\n", [400], "close"),
  c("two Host fields: the pod sees its own", r("GET /o/pub/api/version", ["Host: evil"]), [200], "open", {pub: ["GET /api/version"],}),
  // Request lines and targets
  c("a request line without a version", "GET /o/pub/api/version\r\nHost: x\r\n\r\n", [400], "close"),
  c("a lower-case method", r("get /o/pub/api/version"), [400], "close"),
  c("a target byte over 0x7F", r("GET /o/pub/v1/models/\xff"), [400], "close"),
  c("absolute form needs the key like any target", r("GET http://evil/o/priv/v1/models"), [401], "open"),
  c("absolute form with the key", r("GET http://evil/o/priv/v1/models", [K]), [200], "open", {priv: ["GET /v1/models"],}),
  c("absolute form to the management API", r("GET http://evil/_gantry/v1/orgs/o/keys"), [401], "open"),
  c("an asterisk target", r("OPTIONS *"), [404], "open"),
  c("an asterisk GET", r("GET *"), [404], "open"),
  c("dot segments to another app", r("GET /o/pub/../priv/v1/models"), [400], "open"),
  c("encoded dot segments to another app", r("GET /o/pub/%2e%2e/priv/v1/models"), [400], "open"),
  c("upper-case encoded dot segments", r("GET /o/pub/%2E%2E/priv/v1/models"), [400], "open"),
  c("an encoded slash in the app", r("GET /o/pub%2f..%2fpriv/v1/models"), [404], "open"),
  c("an encoded slash after the app", r("GET /o/pub/v1%2f..%2f..%2fpriv/v1/models"), [400], "open"),
  c("a double slash before the org", r("GET //o/priv/v1/models"), [404], "open"),
  c("a double slash after the app", r("GET /o/pub//v1/models"), [400], "open"),
  c("dot segments to the management API", r("GET /o/pub/../../_gantry/v1/orgs/o/keys"), [400], "open"),
  c("encoded dots to the management API", r("GET /o/pub/%2e%2e/%2e%2e/_gantry/v1/orgs/o/keys"), [400], "open"),
  c("the management API from an app's path", r("GET /o/pub/_gantry/v1/orgs/o/keys"), [404], "open"),
  c("the management API without a key", r("GET /_gantry/v1/orgs/o/keys"), [401], "open"),
  c("a management path that climbs out", r("GET /_gantry/v1/orgs/o/keys/../../../../o/priv/v1/models"), [404], "open"),
  c("another org's private app with this org's key", r("GET /p/priv/v1/models", [K]), [403], "open"),
  c("a pod's store management", r("POST /o/pub/api/pull", [K, "Content-Length: 2"], "{}"), [403], "open"),
  // Forwarded headers from a client (no trustProxy): the pod gets only what the gateway saw (checkPodRequest)
  c("a made-up X-Forwarded-For", r("GET /o/pub/api/version", ["X-Forwarded-For: 6.6.6.6"]), [200], "open", { pub: ["GET /api/version"] }),
  c("two X-Forwarded-For fields", r("GET /o/pub/api/version", ["X-Forwarded-For: 6.6.6.6", "X-Forwarded-For: 7.7.7.7, 8.8.8.8"]), [200], "open", { pub: ["GET /api/version"] }),
  c("a made-up X-Forwarded-Proto: https", r("GET /o/pub/api/version", ["X-Forwarded-Proto: https"]), [200], "open", { pub: ["GET /api/version"] }),
  c("Forwarded, X-Forwarded-Host and X-Real-IP", r("GET /o/pub/api/version", ["Forwarded: for=6.6.6.6;proto=https", "X-Forwarded-Host: evil", "X-Real-IP: 6.6.6.6"]), [200], "open", { pub: ["GET /api/version"] }),
  // Pipelining and Authorization
  c("pipelined: only the first carries the key", r("GET /o/priv/v1/models", [K]) + r("GET /o/priv/v1/models"), [200, 401], "open", { priv: ["GET /v1/models"] }),
  c("pipelined: the second asks the management API", r("GET /o/priv/v1/models", [K]) + r("GET /_gantry/v1/orgs/o/keys"), [200, 401], "open", { priv: ["GET /v1/models"] }),
  c("pipelined after a body", r("POST /o/pub/api/chat", ["Content-Length: 2"], "{}") + SMUGGLED, [200, 401], "open", {pub: ["POST /api/chat {}"],}),
  c("two Authorization fields", r("GET /o/priv/v1/models", [K, "Authorization: Key 0123456789abcdef:nope"]), [401], "open"),
  c("two Authorization fields, the bad one first", r("GET /o/priv/v1/models", ["Authorization: Key 0123456789abcdef:nope", K]), [401], "open"),
  c("Expect: 100-continue from HTTP/1.0 gets no interim answer", "POST /o/pub/api/chat HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{}", [200], "close", { pub: ["POST /api/chat {}"] }),
  // Slow and silent clients (clientTimeouts: headers 1 s, request 2 s)
  c("a head cut off, then silence", "GET /o/pub/api/version HTTP/1.1\r\nHost: x\r\n", [408], "close"),
  c("a body cut off, then silence", r("POST /o/pub/api/chat", ["Content-Length: 100"], '{"model":'), [408], "close"),
  c("an answered request, then the start of the next head and silence", r("GET /o/pub/api/version") + "GET /o/pub/api/ver", [200, 408], "close", { pub: ["GET /api/version"] }),
  { ...c("a head sent a byte every 50 ms", r("GET /o/pub/api/version", ["X-A: " + "a".repeat(200)]), [408], "close"), drip: 50 },
  // Oversize
  c("a head over 16 KiB", r("GET /o/pub/api/version", Array.from({ length: 20 }, (_, i) => `X-P${i}: ${"p".repeat(1000)}`)), [431], "close"),
  c("a body over maxBodyBytes by its length", r("POST /o/pub/api/chat", ["Content-Length: 5000"], "x".repeat(5000)), [413], "close"),
  c("a chunked body over maxBodyBytes", chunked(`1388\r\n${"x".repeat(5000)}\r\n0\r\n\r\n`), [413], "close"),
];

/** What no pod may ever see, whatever the case. */
function checkPodRequest(name: PodName, s: Seen): void {
  assert.equal(s.headers.authorization, undefined, `${name} got a caller's key: ${s.line}`);
  assert.equal(s.headers.host, podHosts[name], `${name} got the client's Host: ${s.line}`);
  assert.equal(s.headers["x-smuggled"], undefined, `${name} got a smuggled field: ${s.line}`);
  assert.doesNotMatch(s.line.split(" ")[1]!, /\/\.\.?(\/|$)|%2e|\/\//i, `${name} got a dot segment: ${s.line}`);
  // No trustProxy: the address and scheme the gateway saw, nothing a client sent.
  assert.equal(s.headers["x-forwarded-for"], "127.0.0.1", `${name} got a client's X-Forwarded-For: ${s.line}`);
  assert.equal(s.headers["x-forwarded-proto"], undefined, `${name} got a client's X-Forwarded-Proto: ${s.line}`);
  for (const h of ["forwarded", "x-forwarded-host", "x-real-ip"])
    assert.equal(s.headers[h], undefined, `${name} got a client's ${h}: ${s.line}`);
}

test("hostile requests: the gateway's answers, the connection, and what the pods saw (a table of raw-socket cases)", async (t) => {
  for (const k of CASES)
    await t.test(k.name, async () => {
      for (const list of Object.values(seen)) list.length = 0;
      const conn = await Conn.open(port);
      const bytes = Buffer.from(k.bytes.replaceAll("KEY", key), "latin1");
      if (k.drip) void drip(conn, bytes, k.drip);
      else await conn.send(bytes);
      const statuses: number[] = [];
      for (const _ of k.answers) statuses.push((await conn.answer()).status);
      assert.deepEqual(statuses, k.answers);
      if (k.then === "close") assert.equal(await conn.closedByServer(), "", "the connection closed after the answers");
      else assert.equal(conn.ended, false, "the connection stays open");
      conn.socket.destroy();
      for (const name of Object.keys(seen) as PodName[]) {
        assert.deepEqual(
          seen[name].map((s) => s.line),
          k.pods?.[name] ?? [],
          `what pod ${name} saw`,
        );
        for (const s of seen[name]) checkPodRequest(name, s);
      }
    });
});

/** Writes `bytes` one at a time, `ms` apart, until they are all sent or the connection closes. */
async function drip(conn: Conn, bytes: Buffer, ms: number): Promise<void> {
  for (let i = 0; i < bytes.length && !conn.socket.destroyed && !conn.ended; i++) {
    conn.socket.write(bytes.subarray(i, i + 1));
    await new Promise((r) => setTimeout(r, ms));
  }
}

// ---- Clients that hold memory or connections ----

/** Resolves once `cond` holds (checked on every turn of the event loop's timers; bounded by PATIENCE_MS). */
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  await within(
    (async () => {
      while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
    })(),
    what,
  );
}

/** Another listener of the same gateway, with its own client settings; `onSocket` sees its connections. */
async function gatewayServer(settings: Record<string, unknown>, onSocket?: (s: net.Socket) => void) {
  const config = parseGatewayConfig({ maxBodyBytes: MAX_BODY, ...settings });
  const server = createGatewayServer(config, gateway.handle);
  if (onSocket) server.on("connection", onSocket);
  return { server, port: await listen(server) };
}

/** A raw connection from a given local address (loopback has 127.0.0.0/8). */
async function connectFrom(localAddress: string, to: number): Promise<net.Socket> {
  const s = net.connect({ port: to, host: "127.0.0.1", localAddress });
  s.on("error", () => undefined);
  await new Promise((resolve, reject) => s.once("connect", resolve).once("error", reject));
  return s;
}

test("a client that pipelines hundreds of requests and reads nothing: the gateway makes one answer at a time and stops reading (bounded memory); all are answered once it reads", async () => {
  let gatewaySide: net.Socket | undefined;
  const { port: p } = await gatewayServer({}, (s) => (gatewaySide = s));
  seen.pub.length = 0;
  const n = 300,
    size = 128 * 1024;
  const conn = await Conn.open(p);
  conn.socket.pause();
  await conn.send(r(`GET /o/pub/api/version?bytes=${size}`).repeat(n));
  // The gateway is stalled once its side of the connection cannot take more (the client reads nothing).
  await until("backpressure on the gateway's side", () => gatewaySide?.writableNeedDrain === true);
  const asked = seen.pub.length;
  assert.ok(asked < n / 2, `the pod was asked for ${asked} of ${n} answers while the client read nothing`);
  assert.ok(
    gatewaySide!.writableLength <= 2 * size + 64 * 1024,
    `the gateway holds ${gatewaySide!.writableLength} bytes for the connection`,
  );
  conn.socket.resume();
  for (let i = 0; i < n; i++) assert.equal((await conn.answer()).body.length, size, `answer ${i}`);
  assert.equal(seen.pub.length, n);
  conn.socket.destroy();
});

test("a thousand idle connections are closed by the timeouts while other clients' requests keep working", async () => {
  const { server, port: p } = await gatewayServer({
    clientTimeouts: { headersSeconds: 1, requestSeconds: 2, keepAliveSeconds: 1 },
    clientLimits: { connectionsPerAddress: 0 },
  });
  const idle: net.Socket[] = [];
  const closed: Array<Promise<unknown>> = [];
  for (let i = 0; i < 1000; i++) {
    const s = await connectFrom("127.0.0.2", p);
    s.resume(); // reads (and drops) what arrives, so that the gateway's close is seen
    closed.push(new Promise((resolve) => s.once("close", resolve)));
    // Half never send a byte; half send one request, read its answer and stay (keep-alive).
    if (i % 2) s.write(r("GET /o/pub/api/version"));
    idle.push(s);
  }
  let answered = 0;
  const allClosed = Promise.all(closed).then(() => true);
  let done = false;
  void allClosed.then(() => (done = true));
  while (!done) {
    const res = await fetch(`http://127.0.0.1:${p}/o/pub/api/version`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    answered++;
  }
  await within(allClosed, "the close of every idle connection");
  assert.ok(answered >= 1);
  const open = await new Promise<number>((resolve) => server.getConnections((_, n) => resolve(n)));
  assert.ok(open <= 1, `${open} connections still open`);
});

test("connections beyond clientLimits.connectionsPerAddress get 503 in the API's shape and are closed; other addresses are served", async () => {
  const max = 4;
  const { server, port: p } = await gatewayServer({ clientLimits: { connectionsPerAddress: max } });
  const held = await Promise.all(Array.from({ length: max }, () => connectFrom("127.0.0.3", p)));
  const extra = await connectFrom("127.0.0.3", p);
  let text = "";
  extra.setEncoding("latin1").on("data", (d: string) => (text += d));
  await within(new Promise((resolve) => extra.once("close", resolve)), "the close of the extra connection");
  assert.match(text, /^HTTP\/1\.1 503 /);
  assert.match(text, /\r\nretry-after: 5\r\n/i);
  assert.match(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)).error, /too many connections from 127\.0\.0\.3/);
  const other = await fetch(`http://127.0.0.1:${p}/o/pub/api/version`);
  assert.equal(other.status, 200, "another address is served");
  await other.arrayBuffer();
  held[0]!.destroy();
  await until("the gateway to see the close", async () => {
    const n = await new Promise<number>((resolve) => server.getConnections((_, c) => resolve(c)));
    return n <= max;
  });
  const again = await connectFrom("127.0.0.3", p);
  again.write(r("GET /o/pub/api/version", ["Connection: close"]));
  let answer = "";
  again.setEncoding("latin1").on("data", (d: string) => (answer += d));
  await within(new Promise((resolve) => again.once("close", resolve)), "the answer on a freed slot");
  assert.match(answer, /^HTTP\/1\.1 200 /);
  for (const s of held) s.destroy();
});

test("clientLimits.maxHeaderBytes bounds a request's head: 431 above it, served below it", async () => {
  const { port: p } = await gatewayServer({ clientLimits: { maxHeaderBytes: 4096 } });
  for (const [size, status] of [
    [3000, 200],
    [6000, 431],
  ] as const) {
    const conn = await Conn.open(p);
    await conn.send(r("GET /o/pub/api/version", [`X-Pad: ${"p".repeat(size)}`]));
    assert.equal((await conn.answer()).status, status, `a head of ${size} bytes`);
    conn.socket.destroy();
  }
});

// ---- Forwarded headers and trustProxy ----

/** A gateway of its own over the same pods (trustProxy is the gateway's, not its listener's); its access log lines. */
async function gatewayWith(settings: Record<string, unknown>) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: "info",
    destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
  });
  const config = parseGatewayConfig({ maxBodyBytes: MAX_BODY, ...settings });
  const g = new Gateway({ config, apps, keys, logger });
  const server = createGatewayServer(config, g.handle);
  return { g, lines, port: await listen(server) };
}

/** One request over a raw connection from `from` (a loopback address); its status. */
async function requestFrom(from: string, p: number, bytes: string): Promise<number> {
  const conn = await Conn.open(p, from);
  await conn.send(Buffer.from(bytes, "latin1"));
  const status = (await conn.answer()).status;
  conn.socket.destroy();
  return status;
}

test("trustProxy: a trusted proxy's X-Forwarded-For and -Proto name the client for the pods and the access log; another peer's change nothing", async () => {
  const { g, lines, port: p } = await gatewayWith({ trustProxy: ["127.0.0.1"] });
  const fields = ["X-Forwarded-For: 6.6.6.6, 203.0.113.9", "X-Forwarded-Proto: https"];
  seen.pub.length = 0;
  assert.equal(await requestFrom("127.0.0.1", p, r("GET /o/pub/api/version", fields)), 200);
  assert.equal(await requestFrom("127.0.0.2", p, r("GET /o/pub/api/version", fields)), 200);
  const got = seen.pub.map((s) => [s.headers["x-forwarded-for"], s.headers["x-forwarded-proto"]]);
  // The trusted proxy's client is its last untrusted hop; what that client claimed before it is not believed.
  assert.deepEqual(got, [
    ["203.0.113.9, 127.0.0.1", "https"],
    ["127.0.0.2", undefined],
  ]);
  g.flushEnded();
  assert.deepEqual(
    lines.filter((l) => l.msg === "request").map((l) => l.client),
    ["203.0.113.9", "127.0.0.2"],
  );
  await g.close(0);
});

test("the console's sign-in throttle counts by the client: behind a trusted proxy one user's failures lock out only that user; without trustProxy a made-up X-Forwarded-For escapes nothing", async () => {
  const body = JSON.stringify({ key: "0123456789abcdef:not-the-secret" });
  const signIn = (xff: string) =>
    r(
      "POST /_gantry/v1/session",
      ["Content-Type: application/json", `X-Forwarded-For: ${xff}`, `Content-Length: ${body.length}`],
      body,
    );
  const behind = await gatewayWith({ trustProxy: ["loopback"], console: { signInFreeFailures: 1 } });
  assert.deepEqual(
    [
      await requestFrom("127.0.0.1", behind.port, signIn("198.51.100.1")),
      await requestFrom("127.0.0.1", behind.port, signIn("198.51.100.1")),
    ],
    [401, 429],
    "the user who failed waits",
  );
  assert.equal(
    await requestFrom("127.0.0.1", behind.port, signIn("198.51.100.2")),
    401,
    "another user behind the proxy does not",
  );
  const direct = await gatewayWith({ console: { signInFreeFailures: 1 } });
  assert.deepEqual(
    [
      await requestFrom("127.0.0.4", direct.port, signIn("198.51.100.1")),
      await requestFrom("127.0.0.4", direct.port, signIn("198.51.100.2")),
    ],
    [401, 429],
    "a client that makes up X-Forwarded-For is still one address",
  );
  await behind.g.close(0);
  await direct.g.close(0);
});
