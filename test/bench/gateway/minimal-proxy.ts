// The floor of a Node proxy on this machine, for comparison with the gateway: node:http in front of the same upstream
// through undici (one keep-alive Pool, as the gateway), the prefix stripped, the Authorization header compared with
// the key (a static string compare, as the nginx row does) and nothing else: no routing table, no key store, no
// metrics, no logs, no usage. The optional client argument picks how the upstream is called, to compare clients in
// latency.ts: `dispatch` (the default, undici Pool.dispatch with a handler, as the gateway), `request` (undici
// Pool.request, a promise and a body stream), `agent` (node:http with a keep-alive Agent).
//   node minimal-proxy.ts <port> <upstream origin> <key> [dispatch|request|agent]   prints "ready" once listening
import http from "node:http";
import { Pool, type Dispatcher } from "undici";
import { reportCpuOnRequest } from "./cpu-report.ts";

const [port, upstream, key, client = "dispatch"] = process.argv.slice(2) as [string, string, string, string?];
const pool = new Pool(upstream, { connections: 64, pipelining: 1, keepAliveTimeout: 4000 });
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, keepAliveMsecs: 4000 });
const up = new URL(upstream);
const want = `Key ${key}`;
const PREFIX = "/acme/chat";

function forwardHeaders(raw: string[]): string[] {
  const headers: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!.toLowerCase();
    if (n !== "authorization" && n !== "host" && n !== "connection") headers.push(n, raw[i + 1]!);
  }
  return headers;
}

function viaDispatch(req: http.IncomingMessage, res: http.ServerResponse, path: string, headers: string[]): void {
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart() {},
    onResponseStart(_c, status, h) {
      delete h.connection;
      delete h["keep-alive"];
      res.writeHead(status, h);
    },
    onResponseData(_c, chunk) {
      res.write(chunk);
    },
    onResponseEnd() {
      res.end();
    },
    onResponseError() {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    },
  };
  pool.dispatch({ path, method: req.method!, headers, body: null }, handler);
}

function viaRequest(req: http.IncomingMessage, res: http.ServerResponse, path: string, headers: string[]): void {
  pool.request({ path, method: req.method as Dispatcher.HttpMethod, headers, body: null }).then(
    (r) => {
      delete r.headers.connection;
      delete r.headers["keep-alive"];
      res.writeHead(r.statusCode, r.headers);
      r.body.on("data", (c: Buffer) => res.write(c));
      r.body.on("end", () => res.end());
    },
    () => res.writeHead(502).end(),
  );
}

function viaAgent(req: http.IncomingMessage, res: http.ServerResponse, path: string, headers: string[]): void {
  const h: Record<string, string> = {};
  for (let i = 0; i < headers.length; i += 2) h[headers[i]!] = headers[i + 1]!;
  const r = http.request({ host: up.hostname, port: up.port, path, method: req.method, headers: h, agent }, (u) => {
    delete u.headers.connection;
    delete u.headers["keep-alive"];
    res.writeHead(u.statusCode ?? 502, u.headers);
    u.on("data", (c: Buffer) => res.write(c));
    u.on("end", () => res.end());
  });
  r.on("error", () => res.writeHead(502).end());
  r.end();
}

const forward = { agent: viaAgent, request: viaRequest }[client] ?? viaDispatch;

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.headers.authorization !== want) {
    res.writeHead(401).end();
    return;
  }
  if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) req.resume();
  forward(req, res, req.url!.slice(PREFIX.length), forwardHeaders(req.rawHeaders));
});
reportCpuOnRequest();
server.listen(Number(port), "127.0.0.1", () => console.log("ready"));
process.on("SIGTERM", () => process.exit(0));
