// Step 4, forward: sending one request to one pod with undici (a keep-alive Pool per pod), writing the answer straight
// into the client's response as it arrives: no buffering, so SSE and NDJSON tokens pass at once, and a client that
// reads nothing stops the pod's answer (backpressure). A client that goes away aborts the pod's request (the pod frees
// the sequence).
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { Pool, type Dispatcher } from "undici";
import { streamErrorEvent, type ErrorShape } from "../errors.ts";
import { UsageEventFilter, UsageScanner } from "../5-account/usage.ts";

/** Hop-by-hop headers (RFC 9110 §7.6.1) and what the gateway sets itself: never copied across. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
/**
 * Request headers not sent to pods: the caller's key stays at the gateway; undici sets Host and the body's length; the
 * forwarded-for and scheme headers are the gateway's own (a client's are believed only from trusted proxies).
 */
const NOT_FORWARDED = new Set([
  ...HOP_BY_HOP,
  "authorization",
  "x-api-key",
  "host",
  "content-length",
  "x-request-id",
  "expect",
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "forwarded",
  "x-real-ip",
]);

/** The field names a Connection header lists (hop-by-hop as well, RFC 9110 §7.6.1); none for the usual values. */
function listedIn(connection: string | string[] | undefined): Set<string> | undefined {
  if (connection === undefined || connection === "keep-alive" || connection === "close") return undefined;
  const listed = new Set<string>();
  for (const v of Array.isArray(connection) ? connection : [connection])
    for (const t of v.split(",")) listed.add(t.trim().toLowerCase());
  return listed;
}

/**
 * The request headers for the pod from the client's raw header list (name, value, name, value...), with the gateway's
 * X-Request-Id, X-Forwarded-For (the client and the trusted hops) and, over TLS, X-Forwarded-Proto: https.
 */
export function upstreamHeaders(
  raw: readonly string[],
  requestId: string,
  client: { forwardedFor: string; tls: boolean },
): string[] {
  const out: string[] = [];
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === "connection") for (const n of listedIn(raw[i + 1]) ?? []) (listed ??= new Set()).add(n);
    if (NOT_FORWARDED.has(name)) continue;
    out.push(name, raw[i + 1]!);
  }
  if (listed) for (let i = out.length - 2; i >= 0; i -= 2) if (listed.has(out[i]!)) out.splice(i, 2);
  out.push("x-request-id", requestId);
  if (client.forwardedFor) out.push("x-forwarded-for", client.forwardedFor);
  // The scheme only where a trusted proxy said it, or the gateway serves TLS itself: plain HTTP is the default.
  if (client.tls) out.push("x-forwarded-proto", "https");
  return out;
}

/** The response headers for the client: the pod's less hop-by-hop ones (copied: deletes would slow the object). */
export function downstreamHeaders(h: IncomingHttpHeaders, requestId: string): IncomingHttpHeaders {
  const listed = listedIn(h.connection);
  const out: IncomingHttpHeaders = {};
  for (const name in h) if (!HOP_BY_HOP.has(name) && !listed?.has(name)) out[name] = h[name];
  out["x-request-id"] = requestId;
  return out;
}

type Tokens = { prompt: number; completion: number };

export type ProxyOutcome =
  /** The pod answered and the answer was passed on whole. */
  | { kind: "done"; status: number; tokens?: Tokens }
  /** No connection could be made: nothing was sent, so another pod may be tried. */
  | { kind: "refused"; error: Error }
  /** The connection broke after the request went out and before a byte of answer (the pod was killed, or closed a
   * kept-alive connection as the request arrived): the client has nothing yet, so it may be tried on another pod. */
  | { kind: "reset"; error: Error }
  /** The pod took too long to start answering (no byte of answer yet). */
  | { kind: "timeout"; error: Error }
  /** The exchange broke after it started (`started`: the client already has part of the answer). */
  | { kind: "failed"; error: Error; started: boolean; tokens?: Tokens }
  /** Aborted on purpose (the client went away, the app was deleted, shutdown). */
  | { kind: "aborted"; started: boolean; tokens?: Tokens };

const CONNECT_ERRORS = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "ETIMEDOUT",
]);
/** The connection ended or was reset (undici's SocketError when the pod closed it without an error). */
const RESET_ERRORS = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);
const codeOf = (e: unknown): string => (e as { code?: string })?.code ?? "";

export interface ForwardOptions {
  method: string;
  path: string;
  headers: string[];
  body: Buffer | null;
  requestId: string;
  /** The response already started (a held streaming request got keep-alives): the pod's head is not sent again. */
  committed: "sse" | "ndjson" | undefined;
  /** Take the usage-only event out of an SSE answer (the gateway asked for it to meter tokens). */
  dropUsageEvent: boolean;
  /** Read token counts from the answer (generation and embedding routes; model listings carry none). */
  meter: boolean;
  /** The route's error shape (of the error event that ends a committed stream). */
  shape: ErrorShape;
  /** What the caller learns of the answer as it arrives (the request's own record: no callback per request). */
  sink: ForwardSink;
}

export interface ForwardSink {
  /** When the request arrived (performance.now()). */
  t0: number;
  /** The content type of the answer, once its head is in (kept if already set). */
  sentType?: string;
  /** Time to the pod's answer's head, ms since t0. */
  ttfbMs?: number;
}

/** A running forward: abort() stops it (the outcome is then "aborted"). */
export interface Forwarding {
  done: Promise<ProxyOutcome>;
  abort(reason: string): void;
}

export class Upstreams {
  private readonly pools = new Map<string, Pool>();
  private readonly opts: Pool.Options;
  private readonly timeouts: { headersTimeout: number; bodyTimeout: number };

  constructor(o: { connectionsPerPod: number; headersTimeoutMs: number; idleTimeoutMs: number }) {
    this.timeouts = { headersTimeout: o.headersTimeoutMs, bodyTimeout: o.idleTimeoutMs };
    this.opts = {
      connections: o.connectionsPerPod,
      pipelining: 1,
      // Idle connections are closed before the pod's own 5 s keep-alive timeout can race a request.
      keepAliveTimeout: 4000,
      ...this.timeouts,
      connect: { timeout: 3000 },
    };
  }

  private pool(origin: string): Pool {
    let p = this.pools.get(origin);
    if (!p) {
      p = new Pool(origin, this.opts);
      this.pools.set(origin, p);
    }
    return p;
  }

  /** Closes the pools of pods that are gone (their running answers finish). */
  retain(origins: ReadonlySet<string>): void {
    for (const [origin, p] of this.pools)
      if (!origins.has(origin)) {
        this.pools.delete(origin);
        void p.close().catch(() => undefined);
      }
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }

  /** The status of a GET (0 when there is no answer within the timeout). */
  async status(origin: string, path: string, timeoutMs: number): Promise<number> {
    try {
      const r = await this.pool(origin).request({
        method: "GET",
        path,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await r.body.dump();
      return r.statusCode;
    } catch {
      return 0;
    }
  }

  forward(origin: string, res: ServerResponse, o: ForwardOptions): Forwarding {
    const f = new Forward(res, o);
    try {
      this.pool(origin).dispatch({ path: o.path, method: o.method, headers: o.headers, body: o.body }, f);
    } catch (error) {
      f.finish({ kind: "failed", error: error as Error, started: false });
    }
    f.watchClient(); // after the request went out: nothing before it that can wait
    return f;
  }
}

/**
 * One forwarded exchange: undici's handler of the pod's answer (writing it into the client's response) and the
 * caller's handle on it. A class, so a request allocates one object rather than a closure per callback.
 */
class Forward implements Dispatcher.DispatchHandler, Forwarding {
  private pending: Promise<ProxyOutcome> | undefined;
  private resolve: ((x: ProxyOutcome) => void) | undefined;
  private outcome: ProxyOutcome | undefined;
  private readonly res: ServerResponse;
  private readonly o: ForwardOptions;
  private controller: Dispatcher.DispatchController | undefined;
  private abortReason: Error | undefined;
  private started: boolean;
  private settled = false;
  private scanner: UsageScanner | undefined;
  private filter: UsageEventFilter | undefined;
  private status = 0;
  /** Bytes of a sized answer still to come (the last piece goes out with res.end, in the same write). */
  private left = -1;
  /** A committed stream's failed answer, collected for its error event. */
  private errorBody: string | undefined;
  /** Made on the first backpressure only. */
  private onDrain: (() => void) | undefined;

  constructor(res: ServerResponse, o: ForwardOptions) {
    this.res = res;
    this.o = o;
    this.started = o.committed !== undefined;
  }

  get done(): Promise<ProxyOutcome> {
    if (this.outcome) return Promise.resolve(this.outcome);
    return (this.pending ??= new Promise<ProxyOutcome>((r) => {
      this.resolve = r;
    }));
  }

  /** From now on a client that goes away aborts the pod's request (unless the exchange is over already). */
  watchClient(): void {
    if (!this.settled) this.res.on("close", this.onClientClose);
  }

  finish(x: ProxyOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.res.off("close", this.onClientClose);
    if (this.onDrain) this.res.off("drain", this.onDrain);
    this.outcome = x;
    this.resolve?.(x);
  }

  private readonly onClientClose = (): void => {
    if (!this.res.writableFinished) this.abort("client closed the connection");
  };

  abort(reason: string): void {
    if (this.settled || this.abortReason) return;
    this.abortReason = new Error(reason);
    this.controller?.abort(this.abortReason);
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.abortReason) c.abort(this.abortReason);
  }

  onResponseStart(c: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    const o = this.o;
    this.status = statusCode;
    const type = String(headers["content-type"] ?? "");
    o.sink.sentType ??= type;
    o.sink.ttfbMs ??= performance.now() - o.sink.t0;
    if (o.committed && statusCode >= 400) {
      this.errorBody = "";
      return;
    }
    if (o.meter) this.scanner = new UsageScanner(type);
    if (o.dropUsageEvent && type.includes("text/event-stream")) this.filter = new UsageEventFilter();
    if (o.committed) return;
    try {
      this.res.writeHead(statusCode, downstreamHeaders(headers, o.requestId));
    } catch (err) {
      // A field node refuses to write (a CR or LF in a value): nothing went out, the client gets 502.
      c.abort(new Error(`the app's answer has an invalid header: ${(err as Error).message}`));
      return;
    }
    this.started = true;
    const length = Number(headers["content-length"] ?? -1);
    if (!this.filter && Number.isSafeInteger(length)) this.left = length;
    // SSE/NDJSON: the head goes out now, not with the first token.
    if (this.filter || type.includes("event-stream") || type.includes("ndjson")) this.res.flushHeaders();
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.errorBody !== undefined) {
      if (this.errorBody.length < 65536) this.errorBody += chunk.toString("utf8");
      return;
    }
    this.scanner?.push(chunk);
    if (this.left >= 0 && (this.left -= chunk.length) <= 0) {
      this.res.end(chunk); // the whole answer: head and body go out in one write, now
      return;
    }
    const out = this.filter ? this.filter.push(chunk) : chunk;
    if (out.length > 0 && !this.res.write(out)) {
      c.pause();
      this.onDrain ??= () => this.controller?.resume();
      this.res.once("drain", this.onDrain);
    }
  }

  onResponseEnd(): void {
    if (this.errorBody !== undefined) {
      this.res.end(streamErrorEvent(this.o.shape, this.o.committed ?? "ndjson", this.status, this.errorBody));
      this.finish({ kind: "done", status: this.status });
      return;
    }
    const rest = this.filter?.end();
    if (rest) this.res.end(rest);
    else if (!this.res.writableEnded) this.res.end();
    const tokens = this.scanner?.end();
    this.finish({ kind: "done", status: this.status, ...(tokens ? { tokens } : {}) });
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    const { started, status } = this;
    const partial = this.scanner?.partial();
    const tokens = partial ? { tokens: partial } : {};
    const code = codeOf(error);
    if (this.abortReason) this.finish({ kind: "aborted", started, ...tokens });
    else if (!started && status === 0 && CONNECT_ERRORS.has(code)) this.finish({ kind: "refused", error });
    else if (!started && status === 0 && RESET_ERRORS.has(code)) this.finish({ kind: "reset", error });
    else if (!started && code === "UND_ERR_HEADERS_TIMEOUT") this.finish({ kind: "timeout", error });
    else this.finish({ kind: "failed", error, started, ...tokens });
  }
}
