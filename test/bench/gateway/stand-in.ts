// A fast stand-in for a pod (node:http, no model): answers every request with a small JSON body like `gantry serve`'s
// /api/version, after reading its body. For the CPU-per-request count of gateway-cpu.ts, where the proxy's cost is
// what is measured and the upstream must be cheap and steady.
//   node stand-in.ts <port> [host]     prints "ready" once listening (host default 127.0.0.1)
import http from "node:http";
import { reportCpuOnRequest } from "./cpu-report.ts";

const body = JSON.stringify({ version: "0.14.0" });
const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.resume();
  req.once("end", () => {
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": body.length });
    res.end(body);
  });
});
reportCpuOnRequest();
server.listen(Number(process.argv[2]), process.argv[3] ?? "127.0.0.1", () => console.log("ready"));
process.on("SIGTERM", () => process.exit(0));
