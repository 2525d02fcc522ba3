// The benchmarks' streaming HTTP client: node:http with plain line splitting, as light as curl. On a 2-core machine
// every CPU cycle the measuring client spends per streamed token is taken from the server's decode threads
// (fetch + web streams cost Gantry ~10% at one stream), so both sides of every comparison use this client.
import http from "node:http";

/**
 * POSTs JSON `body` to `url` and calls `onLine` for each non-empty line of the streamed response (NDJSON or SSE);
 * `onLine` returns true to stop reading. Rejects on a non-2xx status with the response text.
 */
export function postStreamingLines(
  url: string,
  body: unknown,
  onLine: (line: string) => boolean | void,
  headers: Record<string, string> = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", headers: { "content-type": "application/json", ...headers } },
      (res) => {
        res.setEncoding("utf8");
        if ((res.statusCode ?? 0) >= 300) {
          let text = "";
          res
            .on("data", (c: string) => {
              text += c;
            })
            .on("end", () => reject(new Error(`HTTP ${res.statusCode}: ${text}`)));
          return;
        }
        let buf = "",
          stopped = false;
        const take = (line: string) => {
          if (stopped || !line.trim()) return;
          try {
            if (onLine(line.trim()) === true) {
              stopped = true;
              res.destroy();
              resolve();
            }
          } catch (e) {
            stopped = true;
            res.destroy();
            reject(e);
          }
        };
        res.on("data", (chunk: string) => {
          buf += chunk;
          let nl: number;
          while (!stopped && (nl = buf.indexOf("\n")) >= 0) {
            take(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        });
        res.on("end", () => {
          take(buf);
          if (!stopped) resolve();
        });
        res.on("error", (e) => {
          if (!stopped) reject(e);
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
