// The floor of a Node proxy on this machine, for comparison with the gateway: node:http in front of the same upstream
// through undici (one keep-alive Pool, the same dispatch the gateway uses), the prefix stripped, the Authorization
// header compared with the key (a static string compare, as the nginx row does) and nothing else: no routing table,
// no key store, no metrics, no logs, no usage.
//   node minimal-proxy.ts <port> <upstream origin> <key>      prints "ready" once listening
import http from "node:http";
import { Pool, type Dispatcher } from "undici";
import { reportCpuOnRequest } from "./cpu-report.ts";

const [port, upstream, key] = process.argv.slice(2) as [string, string, string];
const pool = new Pool(upstream, { connections: 64, pipelining: 1, keepAliveTimeout: 4000 });
const want = `Key ${key}`;
const PREFIX = "/acme/chat";

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.headers.authorization !== want) {
    res.writeHead(401).end();
    return;
  }
  const headers: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!.toLowerCase();
    if (n !== "authorization" && n !== "host" && n !== "connection") headers.push(n, raw[i + 1]!);
  }
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
  req.resume();
  pool.dispatch({ path: req.url!.slice(PREFIX.length), method: req.method!, headers, body: null }, handler);
});
reportCpuOnRequest();
server.listen(Number(port), "127.0.0.1", () => console.log("ready"));
process.on("SIGTERM", () => process.exit(0));
