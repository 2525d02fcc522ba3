// A queued request run through the gateway's own pipeline (dispatch → auth → limits → hold/cold start → a pod →
// accounting) in process: an IncomingMessage that carries the stored body, and a response that collects the app's
// answer in memory. Destroying the response (cancel, shutdown) aborts the pod's request at once, as a client that
// goes away does.
import { IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { Socket } from "node:net";
import { Writable } from "node:stream";
import { actAs, limitsCounted } from "../2-authenticate/authenticate.ts";
import type { VerifiedKey } from "../2-authenticate/authorization.ts";

export interface RunRequest {
  org: string;
  app: string;
  rest: string;
  query: string;
  method: string;
  contentType?: string;
  body: Buffer;
  requestId: string;
  key?: VerifiedKey;
}

/** The request as node's parser would have made it, body included. */
export function runRequest(r: RunRequest): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = r.method;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = "1.1";
  const headers: Record<string, string> = {
    "content-length": String(r.body.length),
    "x-request-id": r.requestId,
    ...(r.contentType ? { "content-type": r.contentType } : {}),
  };
  req.headers = headers;
  req.rawHeaders = Object.entries(headers).flat();
  req.url = `/${r.org}/${r.app}${r.rest}${r.query}`;
  if (r.key) actAs(req, r.key);
  limitsCounted(req);
  req.complete = true;
  if (r.method !== "GET" && r.method !== "HEAD") req.push(r.body);
  req.push(null);
  return req;
}

/** An answer collected in memory: what ServerResponse offers the gateway's pipeline, and its end. */
export class CollectedResponse extends Writable {
  statusCode = 200;
  headersSent = false;
  private readonly headers = new Map<string, string>();
  private readonly chunks: Buffer[] = [];
  /** Settles when the answer is whole (true) or was cut (false). */
  readonly ended: Promise<boolean>;

  constructor() {
    super();
    this.ended = new Promise((resolve) => {
      this.once("finish", () => resolve(true));
      this.once("close", () => resolve(this.writableFinished));
    });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.headersSent = true;
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    cb();
  }

  writeHead(status: number, headers?: OutgoingHttpHeaders | readonly string[]): this {
    this.statusCode = status;
    if (Array.isArray(headers)) for (let i = 0; i < headers.length; i += 2) this.setHeader(headers[i], headers[i + 1]);
    else if (headers)
      for (const [k, v] of Object.entries(headers as OutgoingHttpHeaders)) if (v !== undefined) this.setHeader(k, v);
    this.headersSent = true;
    return this;
  }

  setHeader(name: string, value: number | string | readonly string[]): this {
    this.headers.set(name.toLowerCase(), Array.isArray(value) ? value.join(", ") : String(value));
    return this;
  }
  getHeader(name: string): string | undefined {
    return this.headers.get(name.toLowerCase());
  }
  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }
  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }
  flushHeaders(): void {
    this.headersSent = true;
  }
  writeContinue(): void {}

  body(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** Typed as the ServerResponse the pipeline writes to (it uses the members above and Writable's). */
  asServerResponse(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}
