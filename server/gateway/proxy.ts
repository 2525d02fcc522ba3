// Forwarding one request to one pod over the gateway's HTTP/1.1 client (http1-client.ts: a pool of keep-alive
// connections per pod), writing the answer straight into the client's response as it arrives: no buffering, so SSE
// and NDJSON tokens pass at once. A client that goes away aborts the upstream request (the pod frees the sequence).
// Measured against undici, node:http and nginx in `npm run bench gateway`.
import type { IncomingHttpHeaders } from "node:http";
import type { OutgoingResponse } from "./http1-server.ts";
import { Http1Pool, type Http1Exchange, type Http1Handler, type Http1Options } from "./http1-client.ts";
import { streamErrorEvent } from "./hold.ts";
import { UsageEventFilter, UsageScanner } from "./usage.ts";

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
/** Request headers not sent to pods: the caller's key stays at the gateway; the body is re-sent with its length. */
const NOT_FORWARDED = new Set([
  ...HOP_BY_HOP,
  "authorization",
  "x-api-key",
  "host",
  "content-length",
  "x-request-id",
  "expect",
]);

/** The request headers for the pod from the client's raw header list (name, value, name, value...). */
export function upstreamHeaders(raw: readonly string[], requestId: string, clientIp: string | undefined): string[] {
  const out: string[] = [];
  let forwardedFor: string | undefined;
  /** The fields the client's Connection header names: hop-by-hop as well (RFC 9110 §7.6.1). */
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === "connection")
      for (const t of raw[i + 1]!.split(",")) (listed ??= new Set()).add(t.trim().toLowerCase());
    if (NOT_FORWARDED.has(name)) continue;
    if (name === "x-forwarded-for") {
      forwardedFor = forwardedFor ? `${forwardedFor}, ${raw[i + 1]}` : raw[i + 1];
      continue;
    }
    out.push(name, raw[i + 1]!);
  }
  if (listed) for (let i = out.length - 2; i >= 0; i -= 2) if (listed.has(out[i]!)) out.splice(i, 2);
  out.push("x-request-id", requestId);
  if (clientIp) out.push("x-forwarded-for", forwardedFor ? `${forwardedFor}, ${clientIp}` : clientIp);
  return out;
}

/**
 * The response headers for the client: the pod's (a fresh object from the client's parser, which has taken out the
 * hop-by-hop fields already), with the request id.
 */
export function downstreamHeaders(h: IncomingHttpHeaders, requestId: string): IncomingHttpHeaders {
  h["x-request-id"] = requestId;
  return h;
}

export type ProxyOutcome =
  /** The pod answered and the answer was passed on whole. */
  | { kind: "done"; status: number; tokens?: { prompt: number; completion: number } }
  /** No connection could be made: nothing was sent, so another pod may be tried. */
  | { kind: "refused"; error: Error }
  /**
   * The connection broke after the request went out and before a byte of answer (the pod was killed or crashed with
   * the request): the client has nothing yet, so another pod may be tried (the routes it serves change nothing).
   */
  | { kind: "reset"; error: Error }
  /** The exchange broke after it started (`started`: the client already has part of the answer). */
  | { kind: "failed"; error: Error; started: boolean; status?: number; tokens?: { prompt: number; completion: number } }
  /** Aborted on purpose (the client went away, the app was deleted, shutdown) */
  | { kind: "aborted"; started: boolean; tokens?: { prompt: number; completion: number } };

const CONNECT_ERRORS = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UPSTREAM_CONNECT_TIMEOUT",
  "ETIMEDOUT",
]);
export const isConnectError = (e: unknown): boolean => CONNECT_ERRORS.has((e as { code?: string })?.code ?? "");
/** The connection ended or was reset (http1-client.ts's code when the pod closed it without an error). */
const RESET_ERRORS = new Set(["ECONNRESET", "EPIPE", "UPSTREAM_CLOSED"]);
/** The pod took too long: to send its answer's head, or inside its body (http1-client.ts's codes). */
export const isTimeoutError = (e: unknown): boolean =>
  /^UPSTREAM_(HEADERS|BODY)_TIMEOUT$/.test((e as { code?: string })?.code ?? "");

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
  private readonly pools = new Map<string, Http1Pool>();
  private readonly opts: Http1Options;

  constructor(o: { connectionsPerPod: number; headersTimeoutMs: number; idleTimeoutMs: number }) {
    this.opts = {
      connections: o.connectionsPerPod,
      connectTimeoutMs: 3000,
      headersTimeoutMs: o.headersTimeoutMs,
      bodyTimeoutMs: o.idleTimeoutMs,
      keepAliveMs: 4000,
    };
  }

  pool(origin: string): Http1Pool {
    let p = this.pools.get(origin);
    if (!p) {
      p = new Http1Pool(origin, this.opts);
      this.pools.set(origin, p);
    }
    return p;
  }

  /** Closes the pools of pods that are gone (their running answers finish). */
  retain(origins: ReadonlySet<string>): void {
    for (const [origin, p] of this.pools)
      if (!origins.has(origin)) {
        this.pools.delete(origin);
        p.close(false);
      }
  }

  close(): void {
    for (const p of this.pools.values()) p.close(true);
    this.pools.clear();
  }

  /** The status of a GET (0 when there is no answer within the timeout). */
  status(origin: string, path: string, timeoutMs: number): Promise<number> {
    return new Promise((resolve) => {
      let status = 0;
      try {
        this.pool(origin).request(
          { method: "GET", path, headers: [], body: null, timeoutMs },
          {
            onHead: (s) => (status = s),
            onData: () => undefined,
            onEnd: () => resolve(status),
            onError: () => resolve(0),
          },
        );
      } catch {
        resolve(0);
      }
    });
  }

  forward(origin: string, res: OutgoingResponse, o: ForwardOptions): Forwarding {
    const f = new Forward(res, o);
    try {
      f.exchange = this.pool(origin).request({ path: o.path, method: o.method, headers: o.headers, body: o.body }, f);
      if (f.abortReason) f.exchange.abort(f.abortReason);
    } catch (error) {
      f.finish({ kind: "failed", error: error as Error, started: false });
    }
    f.watchClient(); // after the request went out: nothing before it that can wait
    return f;
  }
}

/**
 * One forwarded exchange: the handler of the pod's answer (writing it into the client's response) and the caller's
 * handle on it. A class, so a request allocates one object rather than a closure per callback.
 */
class Forward implements Http1Handler, Forwarding {
  /** Made when first asked for (after the request went out), or the outcome when it came first. */
  private pending: Promise<ProxyOutcome> | undefined;
  private resolve: ((x: ProxyOutcome) => void) | undefined;
  private outcome: ProxyOutcome | undefined;
  private readonly res: OutgoingResponse;
  private readonly o: ForwardOptions;
  exchange: Http1Exchange | undefined;
  abortReason: Error | undefined;
  private started: boolean;
  private settled = false;
  private scanner: UsageScanner | undefined;
  private filter: UsageEventFilter | undefined;
  private status = 0;
  /** A committed stream's failed answer, collected for its error event. */
  private errorBody: string | undefined;

  constructor(res: OutgoingResponse, o: ForwardOptions) {
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

  /** A client that goes away mid-answer: the pod's request is aborted at once (it frees the sequence). */
  private readonly onClientClose = (): void => {
    if (!this.res.writableFinished) this.abort("client closed the connection");
  };

  /** Made on the first backpressure only. */
  private onDrain: (() => void) | undefined;

  abort(reason: string): void {
    if (this.settled || this.abortReason) return;
    this.abortReason = new Error(reason);
    this.exchange?.abort(this.abortReason);
  }

  onHead(statusCode: number, headers: IncomingHttpHeaders): void {
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
    this.started = true;
    this.res.writeHead(statusCode, downstreamHeaders(headers, o.requestId));
    // SSE/NDJSON: the head goes out now, not with the first token.
    if (this.filter || type.includes("event-stream") || type.includes("ndjson")) this.res.flushHeaders();
  }

  onData(chunk: Buffer, last: boolean): void {
    if (this.errorBody !== undefined) {
      if (this.errorBody.length < 65536) this.errorBody += chunk.toString("utf8");
      return;
    }
    this.scanner?.push(chunk);
    if (last && !this.filter) {
      // The whole answer: head and body go out in one write, now (res.write would wait for the next tick).
      this.res.end(chunk);
      return;
    }
    const out = this.filter ? this.filter.push(chunk) : chunk;
    if (out.length > 0 && !this.res.write(out)) {
      this.exchange?.pause();
      this.onDrain ??= () => this.exchange?.resume();
      this.res.once("drain", this.onDrain);
    }
  }

  onEnd(): void {
    if (this.errorBody !== undefined) {
      this.res.end(streamErrorEvent(this.o.committed ?? "ndjson", this.status, this.errorBody));
      this.finish({ kind: "done", status: this.status });
      return;
    }
    const rest = this.filter?.end();
    if (rest) this.res.end(rest);
    else if (!this.res.writableEnded) this.res.end();
    const tokens = this.scanner?.end();
    this.finish({ kind: "done", status: this.status, ...(tokens ? { tokens } : {}) });
  }

  onError(error: Error): void {
    const { started, status } = this;
    const partial = this.scanner?.partial();
    const tokens = partial ? { tokens: partial } : {};
    if (this.abortReason) this.finish({ kind: "aborted", started, ...tokens });
    else if (!started && status === 0 && isConnectError(error)) this.finish({ kind: "refused", error });
    else if (!started && status === 0 && RESET_ERRORS.has((error as { code?: string }).code ?? ""))
      this.finish({ kind: "reset", error });
    else this.finish({ kind: "failed", error, started, ...(status ? { status } : {}), ...tokens });
  }
}
