// The kubelet's log endpoint, so `kubectl logs` works for process-runtime pods: the apiserver proxies
// GET /containerLogs/<ns>/<pod>/<container> to the node's InternalIP (127.0.0.1) at its kubeletEndpoint port.
// Supports tailLines, limitBytes and follow; a container's log file holds all its runs (`--previous` is not separate).
import fs from "node:fs";
import https from "node:https";
import path from "node:path";

/** The last n lines of text. Pure. */
export function tailLines(text: string, n: number): string {
  if (n <= 0) return "";
  const lines = text.split("\n");
  const trailing = lines.at(-1) === "" ? lines.pop() : undefined;
  return lines.slice(Math.max(0, lines.length - n)).join("\n") + (trailing === "" ? "\n" : "");
}

export function startLogServer(opts: {
  port: number;
  cert: string;
  key: string;
  podsDir: string;
  log(msg: string): void;
}): https.Server {
  const server = https.createServer(
    { cert: fs.readFileSync(opts.cert), key: fs.readFileSync(opts.key) },
    (req, res) => {
      const url = new URL(req.url ?? "/", "https://kubelet");
      const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      const file = m ? path.join(opts.podsDir, `${m[1]}_${m[2]}`, `${m[3]}.log`) : "";
      if (!m || !fs.existsSync(file)) {
        res
          .writeHead(404, { "content-type": "text/plain" })
          .end(m ? `no logs for container ${m[3]} of pod ${m[1]}/${m[2]}\n` : "not found\n");
        return;
      }
      res.writeHead(200, { "content-type": "text/plain" });
      let text = fs.readFileSync(file, "utf8");
      let offset = Buffer.byteLength(text);
      const tail = url.searchParams.get("tailLines"),
        limit = url.searchParams.get("limitBytes");
      if (tail !== null) text = tailLines(text, Number(tail));
      if (limit !== null) text = text.slice(0, Number(limit));
      res.write(text);
      if (url.searchParams.get("follow") !== "true") {
        res.end();
        return;
      }
      const timer = setInterval(() => {
        if (!fs.existsSync(file)) {
          clearInterval(timer);
          res.end();
          return;
        }
        const size = fs.statSync(file).size;
        if (size <= offset) return;
        const fd = fs.openSync(file, "r");
        const chunk = Buffer.alloc(size - offset);
        fs.readSync(fd, chunk, 0, chunk.length, offset);
        fs.closeSync(fd);
        offset = size;
        res.write(chunk);
      }, 250);
      res.on("close", () => clearInterval(timer));
    },
  );
  server.on("error", (err) => opts.log(`log server: ${String(err)}`));
  server.listen(opts.port, "127.0.0.1");
  return server;
}
