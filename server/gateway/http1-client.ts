// The gateway's HTTP/1.1 client for pods: a pool of keep-alive connections per pod, one request at a time on each,
// the request head and body written in one go and the answer handed on as it arrives (http1-parse.ts frames it).
// Written for the gateway's one job (small JSON requests and long token streams to `gantry serve`): a request on an
// idle connection is written at once, in the caller's turn of the event loop, and each answer costs one parse of
// its head and no objects beyond its exchange. undici, measured side by side in test/bench/gateway/latency.ts, adds
// ≈ 0.05 ms per request at one connection (an event-loop hop before reusing a connection, its wasm parser).
//
// Faults: a connection that cannot be made fails with the socket's code (ECONNREFUSED...; the caller may try another
// pod); a kept-alive connection the pod closed just as a request went out (its idle timeout) is retried once on a
// new connection, before any byte of an answer, as browsers and Go's client do; anything else fails the exchange.
import type { IncomingHttpHeaders } from "node:http";
import net from "node:net";
import { ChunkedDecoder, HttpParseError, MAX_HEAD_BYTES, parseResponseHead, type ResponseHead } from "./http1-parse.ts";

export interface Http1Options {
  /** Connections to one pod at most; requests beyond wait for a free one. */
  connections: number;
  connectTimeoutMs: number;
  /** From the end of the request to the end of the answer's head. */
  headersTimeoutMs: number;
  /** Longest pause between pieces of an answer's body. */
  bodyTimeoutMs: number;
  /** How long an idle connection is kept (less when the pod's Keep-Alive says it keeps it for less). */
  keepAliveMs: number;
}

export interface Http1Request {
  method: string;
  /** Path and query. */
  path: string;
  /** Header names and values, alternating (lowercase names; no Host, no hop-by-hop headers). */
  headers: readonly string[];
  body: Buffer | null;
  /** Overrides the header and body timeouts for this request. */
  timeoutMs?: number;
}

/** What receives an answer. Exactly one of onEnd and onError is called, last. */
export interface Http1Handler {
  onHead(status: number, headers: IncomingHttpHeaders): void;
  /** A piece of the body; `last`: the body is complete with it (onEnd follows at once). */
  onData(chunk: Buffer, last: boolean): void;
  onEnd(): void;
  onError(error: Error): void;
}

/** A request under way. */
export interface Http1Exchange {
  /** Stops reading the answer (backpressure) until resume(). */
  pause(): void;
  resume(): void;
  /** Ends the exchange: the connection is closed (the pod sees its client go) and onError(reason) is called. */
  abort(reason: Error): void;
}

/** How often idle connections are looked at (they close within this much of their keep-alive time). */
const SWEEP_MS = 500;
const CRLFCRLF = Buffer.from("\r\n\r\n");
const codedError = (message: string, code: string): Error => Object.assign(new Error(message), { code });
/** Errors of a kept-alive connection that the pod had closed: the request never reached it. */
const STALE = new Set(["ECONNRESET", "EPIPE", "UPSTREAM_CLOSED"]);
const BAD_PATH = /[^!-~]/; // anything but visible ASCII
const BAD_VALUE = /[\r\n\0]/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The request head, checked: nothing a client sent can split it into two requests. */
function requestHead(r: Http1Request, host: string): string {
  if (BAD_PATH.test(r.path) || !TOKEN.test(r.method)) throw new Error("invalid request line");
  let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: ${host}\r\n`;
  const h = r.headers;
  for (let i = 0; i < h.length; i += 2) {
    if (!TOKEN.test(h[i]!) || BAD_VALUE.test(h[i + 1]!)) throw new Error(`invalid header ${h[i]}`);
    head += `${h[i]}: ${h[i + 1]}\r\n`;
  }
  return head + "\r\n";
}

class Exchange implements Http1Exchange {
  conn: Connection | undefined;
  /** Sent on a connection that had carried an earlier request. */
  reused = false;
  /** Bytes of an answer arrived. */
  received = false;
  retried = false;
  over = false;

  readonly pool: Http1Pool;
  readonly request: Http1Request;
  readonly head: string;
  readonly handler: Http1Handler;

  constructor(pool: Http1Pool, request: Http1Request, head: string, handler: Http1Handler) {
    this.pool = pool;
    this.request = request;
    this.head = head;
    this.handler = handler;
  }

  pause(): void {
    if (this.conn?.ex === this) this.conn.socket.pause();
  }

  resume(): void {
    if (this.conn?.ex === this) this.conn.socket.resume();
  }

  abort(reason: Error): void {
    if (this.over) return;
    this.over = true;
    const c = this.conn;
    if (c?.ex === this) {
      c.ex = undefined;
      c.socket.destroy();
    } else this.pool.unqueue(this);
    safely(() => this.handler.onError(reason));
  }

  /** The answer is complete. */
  end(): void {
    this.over = true;
    safely(() => this.handler.onEnd());
  }

  fail(error: Error): void {
    if (this.over) return;
    this.over = true;
    safely(() => this.handler.onError(error));
  }
}

/** A handler that throws must not take the process down from a socket event. */
function safely(f: () => void): void {
  try {
    f();
  } catch {
    // the handler's own failure; the exchange is over either way
  }
}

/** One connection to a pod and the parse state of the answer on it. */
class Connection {
  readonly socket: net.Socket;
  ex: Exchange | undefined;
  private connected = false;
  /** The pod's head received so far (only while it spans several reads). */
  private partial: Buffer | undefined;
  private head: ResponseHead | undefined;
  private left = 0;
  private chunked: ChunkedDecoder | undefined;
  private error: Error | undefined;
  /** The socket's idle timeout now: changed only when it differs (a timer update per request is measurable). */
  private armed: number;
  keepAliveMs: number;
  /** When the connection last became idle (performance.now()). */
  idleSince = 0;

  private readonly pool: Http1Pool;

  constructor(pool: Http1Pool) {
    this.pool = pool;
    this.keepAliveMs = pool.o.keepAliveMs;
    const s = net.connect({ host: pool.host, port: pool.port, noDelay: true });
    this.socket = s;
    this.armed = pool.o.connectTimeoutMs;
    s.setTimeout(this.armed);
    s.on("connect", this.onConnect);
    s.on("data", this.onData);
    s.on("end", this.onEnd);
    s.on("error", this.onSocketError);
    s.on("timeout", this.onTimeout);
    s.on("close", this.onClose);
  }

  start(ex: Exchange, reused: boolean): void {
    this.ex = ex;
    ex.conn = this;
    ex.reused = reused;
    this.head = undefined;
    this.partial = undefined;
    this.chunked = undefined;
    const s = this.socket;
    const body = ex.request.body;
    if (body && body.length > 0) {
      s.cork();
      s.write(ex.head, "latin1");
      s.write(body);
      s.uncork();
    } else s.write(ex.head, "latin1");
    // The timeout after the write: nothing on the way to the pod that can wait.
    if (this.connected) this.arm(ex.request.timeoutMs ?? this.pool.o.headersTimeoutMs);
  }

  /** Sets the socket's idle timeout (node restarts it on every read and write). */
  private arm(ms: number): void {
    if (ms === this.armed) return;
    this.armed = ms;
    this.socket.setTimeout(ms);
  }

  private readonly onConnect = (): void => {
    this.connected = true;
    const ex = this.ex;
    this.arm(ex ? (ex.request.timeoutMs ?? this.pool.o.headersTimeoutMs) : this.pool.o.headersTimeoutMs);
  };

  private readonly onData = (d: Buffer): void => {
    const ex = this.ex;
    if (!ex) {
      this.socket.destroy(); // bytes nobody asked for: the connection cannot be trusted
      return;
    }
    ex.received = true;
    try {
      this.read(ex, d);
    } catch (e) {
      this.ex = undefined;
      this.socket.destroy();
      ex.fail(e instanceof HttpParseError ? e : (e as Error));
    }
  };

  private read(ex: Exchange, d: Buffer): void {
    let piece = d;
    while (!this.head) {
      if (this.partial) piece = Buffer.concat([this.partial, piece]);
      const end = piece.indexOf(CRLFCRLF);
      if (end < 0) {
        if (piece.length > MAX_HEAD_BYTES) throw new HttpParseError("the pod's response head is too large");
        this.partial = piece;
        return;
      }
      this.partial = undefined;
      const head = parseResponseHead(piece.toString("latin1", 0, end), ex.request.method);
      piece = piece.subarray(end + 4);
      if (head.status < 200) {
        if (head.status === 101) throw new HttpParseError("the pod switched protocols");
        continue; // 100 Continue, 103 Early Hints: the final answer follows
      }
      this.head = head;
      if (head.keepAliveMs !== undefined)
        this.keepAliveMs = Math.min(this.pool.o.keepAliveMs, Math.max(head.keepAliveMs - 1000, head.keepAliveMs / 2));
      if (head.body.kind === "length") this.left = head.body.length;
      else if (head.body.kind === "chunked") this.chunked = new ChunkedDecoder();
      ex.handler.onHead(head.status, head.headers);
      if (this.ex !== ex) return; // aborted by the handler
      if (head.body.kind === "length" && this.left === 0) {
        this.complete(ex, head.keepAlive && piece.length === 0);
        return;
      }
      if (head.body.kind !== "length" || piece.length < this.left)
        this.arm(ex.request.timeoutMs ?? this.pool.o.bodyTimeoutMs); // more to wait for
    }
    if (piece.length === 0) return;
    const body = this.head.body;
    if (body.kind === "length") {
      const n = Math.min(this.left, piece.length);
      this.left -= n;
      ex.handler.onData(n === piece.length ? piece : piece.subarray(0, n), this.left === 0);
      if (this.ex === ex && this.left === 0) this.complete(ex, this.head.keepAlive && n === piece.length);
    } else if (body.kind === "chunked") {
      const decoder = this.chunked!;
      for (const part of decoder.push(piece)) {
        ex.handler.onData(part, false);
        if (this.ex !== ex) return;
      }
      if (decoder.done) this.complete(ex, this.head.keepAlive && decoder.rest === piece.length);
    } else ex.handler.onData(piece, false);
  }

  /** The answer is whole: the connection goes back to the pool (or is closed), then the handler hears of it. */
  private complete(ex: Exchange, reusable: boolean): void {
    this.ex = undefined;
    ex.conn = undefined;
    if (!reusable) this.socket.destroy();
    ex.end(); // first: the client's answer goes out before the bookkeeping
    if (reusable) {
      this.socket.resume(); // the exchange may have paused it
      this.pool.release(this);
    }
  }

  private readonly onEnd = (): void => {
    const ex = this.ex;
    if (ex && this.head?.body.kind === "close") this.complete(ex, false);
    else if (!ex) {
      this.pool.forget(this);
      this.socket.destroy();
    }
    // otherwise the close that follows fails the exchange
  };

  private readonly onSocketError = (e: Error): void => {
    this.error ??= e;
  };

  private readonly onTimeout = (): void => {
    const ex = this.ex;
    const o = this.pool.o;
    if (!this.connected)
      this.error = codedError(`no connection to the pod within ${o.connectTimeoutMs} ms`, "UPSTREAM_CONNECT_TIMEOUT");
    else if (ex && !this.head)
      this.error = codedError(
        `the pod sent no answer within ${ex.request.timeoutMs ?? o.headersTimeoutMs} ms`,
        "UPSTREAM_HEADERS_TIMEOUT",
      );
    else if (ex)
      this.error = codedError(
        `the pod's answer paused for more than ${ex.request.timeoutMs ?? o.bodyTimeoutMs} ms`,
        "UPSTREAM_BODY_TIMEOUT",
      );
    else this.pool.forget(this);
    this.socket.destroy();
  };

  private readonly onClose = (): void => {
    this.pool.dropped(this);
    const ex = this.ex;
    if (!ex) return;
    this.ex = undefined;
    ex.conn = undefined;
    const error = this.error ?? codedError("the pod closed the connection", "UPSTREAM_CLOSED");
    const code = (error as { code?: string }).code ?? "";
    if (ex.reused && !ex.received && !ex.retried && !ex.over && STALE.has(code)) {
      ex.retried = true;
      this.pool.assign(ex);
      return;
    }
    ex.fail(error);
  };
}

/** The connections to one pod. */
export class Http1Pool {
  readonly host: string;
  readonly port: number;
  private readonly hostHeader: string;
  private readonly idleConns: Connection[] = [];
  private readonly queue: Exchange[] = [];
  private readonly conns = new Set<Connection>();
  private sweeper: NodeJS.Timeout | undefined;
  private closing = false;

  readonly o: Http1Options;

  constructor(origin: string, o: Http1Options) {
    this.o = o;
    const u = new URL(origin);
    this.host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    this.port = Number(u.port || 80);
    this.hostHeader = u.host;
  }

  /** Sends a request; throws (before anything is sent) when it cannot be written as HTTP/1.1. */
  request(r: Http1Request, handler: Http1Handler): Http1Exchange {
    if (this.closing) throw codedError("the pod's connections are closed", "UPSTREAM_CLOSED");
    const ex = new Exchange(this, r, requestHead(r, this.hostHeader), handler);
    this.assign(ex);
    return ex;
  }

  /** Starts an exchange on an idle connection (not for a retry), a new one, or queues it. */
  assign(ex: Exchange): void {
    if (this.closing) {
      ex.fail(codedError("the gateway is closing", "UPSTREAM_CLOSED"));
      return;
    }
    if (!ex.retried) {
      const c = this.idleConns.pop();
      if (c) {
        c.start(ex, true);
        return;
      }
    }
    if (this.conns.size < this.o.connections) {
      const c = new Connection(this);
      this.conns.add(c);
      c.start(ex, false);
      return;
    }
    this.queue.push(ex);
  }

  unqueue(ex: Exchange): void {
    const i = this.queue.indexOf(ex);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /** A connection finished an answer and may carry another. */
  release(c: Connection): void {
    if (c.socket.destroyed) return; // the handler's doing; its close event drops it
    const next = this.queue.shift();
    if (next) {
      c.start(next, true);
      return;
    }
    if (this.closing) {
      c.socket.destroy();
      return;
    }
    c.idleSince = performance.now();
    this.idleConns.push(c);
    this.sweeper ??= setInterval(this.sweep, SWEEP_MS).unref();
  }

  /**
   * Closes connections idle for about their keep-alive time (before the pod's own idle timeout closes them, which
   * could cross a request on its way). One timer per pool rather than a timer update per request.
   */
  private readonly sweep = (): void => {
    const now = performance.now();
    const conns = this.idleConns; // oldest first
    let n = 0;
    while (n < conns.length && now - conns[n]!.idleSince >= conns[n]!.keepAliveMs - SWEEP_MS) n++;
    for (const c of conns.splice(0, n)) c.socket.destroy();
    if (conns.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  };

  /** An idle connection is going away. */
  forget(c: Connection): void {
    const i = this.idleConns.indexOf(c);
    if (i >= 0) this.idleConns.splice(i, 1);
  }

  /** A connection closed. */
  dropped(c: Connection): void {
    this.forget(c);
    this.conns.delete(c);
    const next = this.queue.shift();
    if (next) this.assign(next);
  }

  /** No new requests; idle connections close now, busy ones when their answer ends (`destroy`: at once). */
  close(destroy: boolean): void {
    this.closing = true;
    for (const c of this.idleConns.splice(0)) c.socket.destroy();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    if (!destroy) return;
    for (const ex of this.queue.splice(0)) ex.abort(codedError("the gateway is closing", "UPSTREAM_CLOSED"));
    for (const c of this.conns) c.socket.destroy();
  }
}
