// The handler and servers of the gateway's HTTP/1.1 conformance tests (test/integration/gateway/http-server*.test.ts):
// createGatewayServer (server/gateway/http-server.ts) with a handler written only with the subset of node's
// IncomingMessage/ServerResponse the gateway uses, so that any server offering that subset can be put under the tests.
import assert from "node:assert/strict";
import type http from "node:http";
import type net from "node:net";
import { parseGatewayConfig } from "../../server/gateway/config.ts";
import { createGatewayServer } from "../../server/gateway/http-server.ts";
import type { Answer } from "./raw-http.ts";

/** The most /flood writes into a client that reads nothing before it concludes there is no backpressure. */
const FLOOD_LIMIT = 256 * 2 ** 20;

// ---- Signals between the tests and the handler (events, never sleeps) ----

const signals = new Map<string, PromiseWithResolvers<unknown>>();
export function signal<T = void>(name: string): PromiseWithResolvers<T> {
  let s = signals.get(name);
  if (!s) signals.set(name, (s = Promise.withResolvers<unknown>()));
  return s as PromiseWithResolvers<T>;
}
let lastId = 0;
export const newId = () => String(++lastId);

// ---- The test handler: only the subset of IncomingMessage/ServerResponse the gateway uses ----

type Req = http.IncomingMessage;
type Res = http.ServerResponse;

/** Every request target the handler was given. */
export const handled: string[] = [];

/** What /echo answers: the request as the handler saw it. */
export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
  rawNames: string[];
  body: string;
  complete: boolean;
  remote: string;
}
const ECHOED_HEADERS = ["host", "x-test", "content-length", "transfer-encoding", "expect"];

function readBody(req: Req, done: (body: Buffer) => void): void {
  const parts: Buffer[] = [];
  req.on("data", (c: Buffer) => parts.push(c));
  req.on("end", () => done(Buffer.concat(parts)));
  req.on("error", () => undefined);
}

/** Answers `value` with res.end(text), the length left to the server unless `sized`. */
function sendJson(res: Res, status: number, value: unknown, sized = false): void {
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  if (sized) res.setHeader("content-length", Buffer.byteLength(text));
  res.end(text);
}

function echoOf(req: Req, body: Buffer): Echo {
  return {
    method: req.method ?? "",
    url: req.url ?? "",
    headers: Object.fromEntries(ECHOED_HEADERS.map((h) => [h, req.headers[h] as string | undefined])),
    rawNames: req.rawHeaders.filter((_, i) => i % 2 === 0),
    body: body.toString("utf8"),
    complete: req.complete,
    remote: req.socket.remoteAddress ?? "",
  };
}

/** Writes `parts` lines with a pause between them, then ends. */
function stream(res: Res, parts: number): void {
  res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    if (i === parts) return void res.end();
    res.write(`part ${i++}\n`);
    setTimeout(next, 10);
  };
  next();
}

/** Writes blocks until res.write says to wait, then one more block on 'drain'. */
function flood(res: Res, id: string): void {
  const block = Buffer.alloc(64 * 1024, "x");
  res.writeHead(200, { "content-type": "application/octet-stream" });
  let written = 0,
    full = false;
  while (!full && written < FLOOD_LIMIT) {
    full = !res.write(block);
    written += block.length;
  }
  signal<{ full: boolean; written: number }>(`flood-full:${id}`).resolve({ full, written });
  if (!full) return void res.end();
  res.once("drain", () => {
    signal(`flood-drain:${id}`).resolve();
    res.end(block);
  });
}

/** Tries to send a header whose name or value holds CR/LF; answers `{threw}` when the server refused it. */
function inject(res: Res, via: string, name: string, value: string): void {
  let threw = false;
  try {
    if (via === "setHeader") {
      res.setHeader(name, value);
      res.writeHead(200, { "content-type": "text/plain" });
    } else res.writeHead(200, { "content-type": "text/plain", [name]: value });
  } catch {
    threw = true;
  }
  try {
    if (res.headersSent) res.end("sent");
    else sendJson(res, 200, { threw });
  } catch {
    // a server that refuses late: the test sees whatever reached the client
  }
}

export function handle(req: Req, res: Res): void {
  handled.push(req.url ?? "");
  const url = new URL(req.url ?? "/", "http://test");
  const q = (k: string) => url.searchParams.get(k) ?? "";
  switch (url.pathname) {
    case "/echo":
      return readBody(req, (body) => sendJson(res, 200, echoOf(req, body), q("sized") !== ""));
    case "/continue": // wants the body, so asks for it (as gateway.ts does: whenever the header asks)
      if (req.headers.expect?.toLowerCase() === "100-continue") res.writeContinue();
      return readBody(req, (body) => sendJson(res, 200, echoOf(req, body)));
    case "/early": // answers at once and never reads the body
      return sendJson(res, Number(q("status") || 200), { early: true });
    case "/close":
      return readBody(req, () => {
        res.writeHead(200, { "content-type": "text/plain", connection: "close" });
        res.end("bye");
      });
    case "/stream":
      return stream(res, Number(q("parts") || 4));
    case "/status":
      res.writeHead(Number(q("code")), { etag: '"v1"' });
      return void res.end();
    case "/flush":
      res.writeHead(200, { "content-type": "text/plain" });
      res.flushHeaders();
      return void signal(`flush:${q("id")}`).promise.then(() => res.end("after the head"));
    case "/hang": // never ends; tells the test how the response closed
      signal(`hang-seen:${q("id")}`).resolve();
      res.once("close", () =>
        signal<{ writableFinished: boolean }>(`hang:${q("id")}`).resolve({ writableFinished: res.writableFinished }),
      );
      if (q("started")) {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("first part\n");
      }
      return;
    case "/flood":
      return flood(res, q("id"));
    case "/inject":
      return inject(res, q("via"), q("name"), q("value"));
    default:
      return sendJson(res, 404, { error: "no such route" });
  }
}

// ---- Servers ----

const servers: http.Server[] = [];

/** Closes every server started, and its connections. */
export function closeServers(): void {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
}

export async function start(clientTimeouts?: { headersSeconds: number; requestSeconds: number }) {
  const server = createGatewayServer(parseGatewayConfig(clientTimeouts ? { clientTimeouts } : {}), handle);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return { server, port: (server.address() as net.AddressInfo).port };
}

export const echoed = (a: Answer): Echo => {
  assert.equal(a.status, 200, a.body.toString());
  return JSON.parse(a.body.toString("utf8")) as Echo;
};
