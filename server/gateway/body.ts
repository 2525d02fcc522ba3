// Reading a request body into memory, bounded: the gateway buffers bodies (they are small JSON) so that a request a
// pod refused can be sent to another one.
import type { IncomingRequest } from "./http1-server.ts";

/** The body, null for GET/HEAD, "too-large" past `max` bytes (the rest is drained), "aborted" if the client left. */
export function readRequestBody(req: IncomingRequest, max: number): Promise<Buffer | null | "too-large" | "aborted"> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > max) {
    req.resume();
    return Promise.resolve("too-large");
  }
  if (req.method === "GET" || req.method === "HEAD") {
    req.resume();
    return Promise.resolve(null);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.off("data", onData);
        req.resume();
        resolve("too-large");
        return;
      }
      chunks.push(c);
    };
    req.on("data", onData);
    req.once("end", () => {
      if (size <= max) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once("error", () => resolve("aborted"));
    req.once("close", () => {
      if (!req.complete) resolve("aborted");
    });
  });
}
