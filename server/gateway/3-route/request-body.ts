// Step 3, route: the request's body, read into memory (bounded: bodies are small JSON, buffered so that a request a
// pod refused can be sent to another one) and parsed once, after a nesting-depth check, into the one view every later
// step reads (PrefixHash's key, the hold's stream style, the body rules of 4-forward/pod-request.ts).
import type { IncomingMessage, ServerResponse } from "node:http";
import { textNestsDeeperThan } from "../../common/json-depth.ts";
import type { RequestBody } from "../context.ts";
import { MAX_BODY_DEPTH } from "../routes.ts";

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

export const NO_BODY: RequestBody = { raw: null, json: undefined };

/** The body's one parsed view, or "too-deep" when it nests deeper than MAX_BODY_DEPTH (answered 400). Pure. */
export function parseBody(raw: Buffer | null, maxDepth = MAX_BODY_DEPTH): RequestBody | "too-deep" {
  if (!raw || raw.length === 0) return { raw, json: undefined };
  if (textNestsDeeperThan(raw, maxDepth)) return "too-deep";
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    return { raw, json: undefined };
  }
  return {
    raw,
    json: json && typeof json === "object" && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined,
  };
}
