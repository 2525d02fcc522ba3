// Reading a request body into memory, bounded: the gateway buffers bodies (they are small JSON) so that a request a
// pod refused can be sent to another one.
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Sends `100 Continue` to a client that waits for it (`Expect: 100-continue`), once its body is wanted: a request
 * refused before (401, 404, 413 by its Content-Length) is answered without the body ever being sent (node then closes
 * the connection). Never to an HTTP/1.0 client, which must not get an interim answer (RFC 9110 §10.1.1).
 */
export function askForBody(req: IncomingMessage, res: ServerResponse): void {
  const expect = req.headers.expect;
  if (expect !== undefined && req.httpVersionMinor >= 1 && !res.headersSent && expect.toLowerCase() === "100-continue")
    res.writeContinue();
}

/** The body, null for GET/HEAD, "too-large" past `max` bytes (the rest is drained), "aborted" if the client left. */
export function readRequestBody(req: IncomingMessage, max: number): Promise<Buffer | null | "too-large" | "aborted"> {
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

/** The Ollama routes whose bodies may hold `keep_alive`. */
export const KEEP_ALIVE_ROUTES: ReadonlySet<string> = new Set([
  "/api/chat",
  "/api/generate",
  "/api/embed",
  "/api/embeddings",
  "/api/rerank",
]);

/**
 * An Ollama request body without its `keep_alive`: through the gateway an app's model stays loaded as its spec says
 * (server.keepAlive), since a caller's keep_alive would let anyone unload (`0`) or time out the model every other
 * caller uses. Undefined when there is nothing to take out (or the body is not a JSON object: the pod answers that).
 */
export function withoutKeepAlive(body: Buffer): Buffer | undefined {
  // A key may be written with \u escapes ("keep\u005falive"): such bodies are parsed too.
  if (body.indexOf("keep_alive") < 0 && body.indexOf("\\u") < 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed) || !Object.hasOwn(parsed, "keep_alive"))
    return undefined;
  const { keep_alive: _, ...rest } = parsed as Record<string, unknown>;
  return Buffer.from(JSON.stringify(rest));
}
