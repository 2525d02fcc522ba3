// The gateway's HTTP/1.1 server for its clients (RFC 9112), on plain TCP sockets: keep-alive, pipelined requests
// answered in order, Content-Length and chunked request bodies, `Expect: 100-continue` answered by the handler,
// chunked or close-delimited streamed answers, and the client timeouts (408). It replaces node:http's server on the
// gateway's path: a small proxied request spent about a third of its gateway CPU time in node:http's request and
// response machinery. The handler sees a request and a response with the parts of node:http's API the gateway uses.
import { EventEmitter } from "node:events";
import http, { type IncomingHttpHeaders, type OutgoingHttpHeader, type OutgoingHttpHeaders } from "node:http";
import net from "node:net";
import { ChunkedDecoder } from "./http1-parse.ts";
import { MAX_REQUEST_HEAD_BYTES, parseRequestHead, type RequestParseError } from "./http1-request-parse.ts";

export interface Http1ServerOptions {
  /** How long a connection may sit idle between requests. */
  keepAliveTimeoutMs: number;
  /** Longest time from a request's first byte to the end of its head. */
  headersTimeoutMs: number;
  /** Longest time from a request's first byte to the end of its body. */
  requestTimeoutMs: number;
  /**
   * The whole raw answer (status line, fields, body; it ends the connection) to a request the server refuses itself:
   * 400 malformed, 408 too slow, 431 head too large. `target` is the request target when it was read, else "/".
   */
  refusal(status: 400 | 408 | 431, message: string, target: string): string;
}

export type RequestListener = (req: IncomingRequest, res: OutgoingResponse) => void;

/** How often connections are checked against the timeouts. */
const CHECK_EVERY_MS = 1000;
/** Bytes of pipelined requests buffered while one is answered, before the connection stops reading. */
const MAX_BUFFERED = 64 * 1024;
/** How long a connection the server ended may wait for the client to close its side. */
const END_GRACE_MS = 5000;
/** An unread request body of at most this much is read and dropped after the answer; a larger one closes. */
const MAX_DRAIN = 1024 * 1024;
const CRLFCRLF = Buffer.from("\r\n\r\n");
const CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n";
const END_CHUNKED = Buffer.from("0\r\n\r\n");

/** A value may not carry CR, LF or NUL (a header injected into the answer). */
const BAD_VALUE = /[\r\n\0]/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

let dateSecond = 0;
let dateValue = "";
/** The Date field, rebuilt once a second. */
function dateField(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateValue = new Date(now).toUTCString();
  }
  return dateValue;
}

/**
 * A request: its head at once, its body as `data` events and `end` once something listens for data or calls
 * resume() (until then the pieces wait here, as in a paused stream). `close` is emitted when the client goes away
 * before the exchange is over.
 */
export class IncomingRequest extends EventEmitter {
  readonly method: string;
  /** The request target (writable: a front end may rewrite it before the gateway routes it). */
  url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly httpVersion: string;
  readonly socket: net.Socket;
  /** The whole body was received. */
  complete: boolean;
  private flowing = false;
  private queued: Buffer[] | undefined;
  private endPending: boolean;

  constructor(
    head: { method: string; url: string; minor: 0 | 1; headers: IncomingHttpHeaders; rawHeaders: string[] },
    socket: net.Socket,
    hasBody: boolean,
  ) {
    super();
    this.method = head.method;
    this.url = head.url;
    this.headers = head.headers;
    this.rawHeaders = head.rawHeaders;
    this.httpVersion = head.minor === 1 ? "1.1" : "1.0";
    this.socket = socket;
    this.complete = !hasBody;
    this.endPending = !hasBody;
  }

  override on(event: string | symbol, listener: (...args: never[]) => void): this {
    super.on(event, listener as (...args: unknown[]) => void);
    if (event === "data") this.resume();
    return this;
  }

  resume(): this {
    if (!this.flowing) {
      this.flowing = true;
      if (this.queued || this.endPending) process.nextTick(this.flush);
    }
    return this;
  }

  /** A piece of the body (from the connection). */
  pushBody(piece: Buffer): void {
    if (this.flowing && !this.queued) this.emit("data", piece);
    else (this.queued ??= []).push(piece);
  }

  /** The body is complete (from the connection). */
  endBody(): void {
    this.complete = true;
    if (this.flowing && !this.queued) this.emit("end");
    else this.endPending = true;
  }

  private readonly flush = (): void => {
    const q = this.queued;
    this.queued = undefined;
    if (q) for (const piece of q) this.emit("data", piece);
    if (this.endPending) {
      this.endPending = false;
      this.emit("end");
    }
  };
}

/**
 * An answer. The head is written with the first body bytes (or by flushHeaders); a body given whole to end() gets a
 * Content-Length, a streamed one the chunked coding (close-delimited for an HTTP/1.0 client). Emits `drain` when a
 * write that returned false has gone out, and `close` when the exchange is over (the client may have gone away first:
 * then writableFinished is false).
 */
export class OutgoingResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  private fields: Record<string, OutgoingHttpHeader> | undefined;
  private given: OutgoingHttpHeaders | undefined;
  private chunked = false;
  private noBody = false;
  /** This answer lets the connection carry another request. */
  keepAlive: boolean;
  private readonly conn: Connection;
  private readonly head: boolean;
  private readonly minor: number;

  constructor(conn: Connection, req: IncomingRequest, keepAlive: boolean) {
    super();
    this.conn = conn;
    this.head = req.method === "HEAD";
    this.minor = req.httpVersion === "1.1" ? 1 : 0;
    this.keepAlive = keepAlive;
  }

  get destroyed(): boolean {
    return this.conn.socket.destroyed;
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    if (this.headersSent) throw new Error("cannot set a header after the answer's head was sent");
    (this.fields ??= {})[name.toLowerCase()] = value;
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    const n = name.toLowerCase();
    return this.getGiven(n) ?? this.fields?.[n];
  }

  writeHead(status: number, headers?: OutgoingHttpHeaders): this {
    if (this.headersSent) throw new Error("the answer's head was sent already");
    this.statusCode = status;
    if (headers) this.given = headers;
    return this;
  }

  /** Sends the head now (a stream's clients see the status before the first event). */
  flushHeaders(): void {
    if (!this.headersSent) this.conn.socket.write(this.headBytes(undefined, false), "latin1");
  }

  /** `100 Continue`: the client may send its body (an HTTP/1.0 client knows no interim answers: nothing is sent). */
  writeContinue(): void {
    if (this.minor === 1 && !this.headersSent && !this.conn.socket.destroyed)
      this.conn.socket.write(CONTINUE, "latin1");
  }

  write(chunk: string | Buffer): boolean {
    if (this.writableEnded || this.conn.socket.destroyed) return false;
    const body = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (!this.headersSent) {
      const head = this.headBytes(body, false);
      return this.send(head, body, false);
    }
    return this.send(undefined, body, false);
  }

  end(chunk?: string | Buffer): this {
    if (this.writableEnded) return this;
    const body = chunk === undefined ? undefined : typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const destroyed = this.conn.socket.destroyed;
    const head = this.headersSent || destroyed ? undefined : this.headBytes(body, true); // (may throw: not ended)
    this.writableEnded = true;
    if (!destroyed) {
      this.send(head, body, true);
      this.writableFinished = true;
    }
    this.conn.answered(this);
    return this;
  }

  /** Writes head (latin1), body piece and, at the end, the last chunk, in one write. */
  private send(head: string | undefined, body: Buffer | undefined, last: boolean): boolean {
    if (head !== undefined && body && body.length > 0 && !this.noBody && !this.chunked) {
      // A whole answer (the common small one): one buffer for head and body, no parts.
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, "latin1");
      body.copy(out, head.length);
      return this.conn.socket.write(out);
    }
    const parts: Buffer[] = [];
    if (head !== undefined) parts.push(Buffer.from(head, "latin1"));
    if (body && body.length > 0 && !this.noBody) {
      if (this.chunked) parts.push(Buffer.from(`${body.length.toString(16)}\r\n`, "latin1"), body, CRLF);
      else parts.push(body);
    }
    if (last && this.chunked) parts.push(END_CHUNKED);
    if (parts.length === 0) return true;
    return this.conn.socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  /** The head, as latin1 text; `whole`: `body` is all of the body (so its length can be given). */
  private headBytes(body: Buffer | undefined, whole: boolean): string {
    const status = this.statusCode;
    this.noBody = this.head || status < 200 || status === 204 || status === 304;
    let out = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "Unknown"}\r\n`;
    let length = false,
      te = false,
      date = false,
      connection = false;
    const add = (name: string, value: OutgoingHttpHeader): void => {
      if (!TOKEN.test(name)) throw new Error(`invalid header name ${JSON.stringify(name)}`);
      const lower = name.toLowerCase();
      if (lower === "content-length") length = true;
      else if (lower === "transfer-encoding") te = true;
      else if (lower === "date") date = true;
      else if (lower === "connection") {
        connection = true;
        if (String(value).toLowerCase().includes("close")) this.keepAlive = false;
      }
      for (const v of Array.isArray(value) ? value : [value]) {
        const s = String(v);
        if (BAD_VALUE.test(s)) throw new Error(`invalid value of header ${name}`);
        out += `${name}: ${s}\r\n`;
      }
    };
    const given = this.given;
    if (this.fields)
      for (const k in this.fields) {
        if (given && this.getGiven(k) !== undefined) continue;
        add(k, this.fields[k]!);
      }
    if (given)
      for (const k in given) {
        const v = given[k];
        if (v !== undefined) add(k, v);
      }
    if (!date) out += `date: ${dateField()}\r\n`;
    if (!this.noBody && !length && !te) {
      if (whole) out += `content-length: ${body?.length ?? 0}\r\n`;
      else if (this.minor === 1) {
        this.chunked = true;
        out += "transfer-encoding: chunked\r\n";
      } else this.keepAlive = false; // the end of the connection ends the body
    }
    if (this.conn.closing) this.keepAlive = false;
    if (!connection) {
      if (!this.keepAlive) out += "connection: close\r\n";
      else if (this.minor === 0) out += "connection: keep-alive\r\n";
    }
    this.headersSent = true; // (not before: a field refused above leaves the answer unsent, for an error answer)
    return `${out}\r\n`;
  }

  private getGiven(lower: string): OutgoingHttpHeader | undefined {
    for (const k in this.given) if (k.toLowerCase() === lower) return this.given[k];
    return undefined;
  }
}

const CRLF = Buffer.from("\r\n");

/** One client connection: requests in order, one answered at a time. */
class Connection {
  readonly socket: net.Socket;
  private readonly server: Http1Server;
  /** Bytes received and not parsed yet (a partial head, pipelined requests). */
  private buf: Buffer | undefined;
  private req: IncomingRequest | undefined;
  private res: OutgoingResponse | undefined;
  /** Body bytes still to come (length-delimited) or the chunked decoder; undefined when the body is complete. */
  private left = 0;
  private decoder: ChunkedDecoder | undefined;
  /** The body of an answered request is read and dropped. */
  private draining = false;
  private drained = 0;
  /** When the current request's first byte came (timeouts), or 0. */
  private startedAt: number;
  private headDone = false;
  /** When the connection went idle after an answer, or 0. */
  private idleSince = 0;
  private parsing = false;
  private refused = false;
  /** How far the buffer was searched for the end of a head already. */
  private scanned = 0;

  constructor(socket: net.Socket, server: Http1Server) {
    this.socket = socket;
    this.server = server;
    this.startedAt = Date.now();
    socket.setNoDelay(true);
    socket.on("data", this.onData);
    socket.on("drain", this.onDrain);
    socket.on("error", this.onError);
    socket.on("end", this.onEnd);
    socket.on("close", this.onClose);
  }

  get closing(): boolean {
    return this.server.closing;
  }

  /** No request under way and nothing buffered. */
  get idle(): boolean {
    return this.req === undefined && this.buf === undefined;
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.refused) return;
    if (this.req && (this.left > 0 || this.decoder)) {
      const at = this.feedBody(chunk);
      if (at >= chunk.length) return;
      chunk = chunk.subarray(at);
    }
    this.buf = this.buf ? this.append(this.buf, chunk) : chunk;
    if (this.req) {
      if (this.buf.length > MAX_BUFFERED) this.socket.pause();
      return;
    }
    if (this.startedAt === 0) this.startedAt = Date.now();
    this.idleSince = 0;
    this.parse();
  };

  /** Room to grow the buffer in (so a head sent a byte at a time costs linear, not quadratic, copying). */
  private spare: Buffer | undefined;

  private append(buf: Buffer, chunk: Buffer): Buffer {
    const n = buf.length + chunk.length;
    const s = this.spare;
    if (s && buf.buffer === s.buffer && buf.byteOffset === s.byteOffset && n <= s.length) {
      chunk.copy(s, buf.length);
      return s.subarray(0, n);
    }
    const grown = Buffer.allocUnsafe(Math.max(n * 2, 4096));
    buf.copy(grown, 0);
    chunk.copy(grown, buf.length);
    this.spare = grown;
    return grown.subarray(0, n);
  }

  private readonly onDrain = (): void => {
    this.res?.emit("drain");
  };

  /**
   * The client sent its last byte: as node:http does, a request under way is given up (the client is taken to be
   * gone: the answer's `close` tells the gateway to stop the pod's work), and the connection ends.
   */
  private readonly onEnd = (): void => {
    if (this.res && !this.res.writableEnded) this.socket.destroy();
    else this.socket.end();
  };

  private readonly onError = (): void => {
    this.socket.destroy();
  };

  private readonly onClose = (): void => {
    this.server.live.delete(this);
    const { req, res } = this;
    if (res && !res.writableEnded) res.emit("close");
    if (req && !req.complete) req.emit("close");
    this.req = undefined;
    this.res = undefined;
  };

  /** Parses and dispatches the requests in the buffer, one at a time. */
  private parse(): void {
    if (this.parsing) return;
    this.parsing = true;
    try {
      while (this.req === undefined && this.buf !== undefined && !this.refused) {
        let buf: Buffer = this.buf;
        let skip = 0;
        while (skip + 1 < buf.length && buf[skip] === 13 && buf[skip + 1] === 10) skip += 2; // empty lines before
        if (skip > 0) {
          buf = buf.subarray(skip);
          this.scanned = 0;
        }
        const end = buf.indexOf(CRLFCRLF, this.scanned);
        if (end < 0) {
          this.scanned = Math.max(0, buf.length - 3);
          this.buf = buf.length > 0 ? buf : undefined;
          if (buf.length > MAX_REQUEST_HEAD_BYTES) this.refuse(431, "the request line or headers are too large");
          else if (buf.includes("\n\n")) this.refuse(400, "malformed HTTP request (bare LF)");
          return;
        }
        let head;
        try {
          head = parseRequestHead(buf.toString("latin1", 0, end));
        } catch (err) {
          const e = err as RequestParseError;
          const target = /^[A-Z]+ (\S+)/.exec(buf.toString("latin1", 0, Math.min(end, 2048)))?.[1] ?? "/";
          this.refuse(
            e.status ?? 400,
            e.status === 431 ? "the request line or headers are too large" : `malformed HTTP request (${e.message})`,
            target,
          );
          return;
        }
        const rest = end + 4 < buf.length ? buf.subarray(end + 4) : undefined;
        this.buf = undefined;
        this.scanned = 0;
        this.spare = undefined;
        this.headDone = true;
        const hasBody = head.body.kind === "chunked" || head.body.length > 0;
        const req = new IncomingRequest(head, this.socket, hasBody);
        const res = new OutgoingResponse(this, req, head.keepAlive && !this.server.closing);
        this.req = req;
        this.res = res;
        if (head.body.kind === "chunked") this.decoder = new ChunkedDecoder();
        else this.left = head.body.length;
        if (!hasBody) this.startedAt = 0;
        this.server.listener(req, res);
        if (rest) {
          const at = hasBody && this.req === req ? this.feedBody(rest) : 0;
          if (at < rest.length) this.buf = rest.subarray(at);
        }
        if (this.req !== undefined && this.buf && this.buf.length > MAX_BUFFERED) this.socket.pause();
      }
    } finally {
      this.parsing = false;
    }
  }

  /** Hands the body bytes at the start of `piece` on to the request; returns where the body ended in the piece. */
  private feedBody(piece: Buffer): number {
    const req = this.req!;
    if (this.decoder) {
      let pieces: Buffer[];
      try {
        pieces = this.decoder.push(piece);
      } catch (err) {
        this.decoder = undefined;
        if (this.res && !this.res.headersSent) this.refuse(400, `malformed HTTP request (${(err as Error).message})`);
        else this.socket.destroy();
        return piece.length;
      }
      for (const p of pieces) this.deliver(req, p);
      if (!this.decoder.done) return piece.length;
      const at = this.decoder.rest;
      this.decoder = undefined;
      this.bodyDone(req);
      return at;
    }
    const n = Math.min(this.left, piece.length);
    if (n > 0) {
      this.left -= n;
      this.deliver(req, n === piece.length ? piece : piece.subarray(0, n));
    }
    if (this.left === 0) this.bodyDone(req);
    return n;
  }

  private deliver(req: IncomingRequest, piece: Buffer): void {
    if (!this.draining) {
      req.pushBody(piece);
      return;
    }
    this.drained += piece.length;
    if (this.drained > MAX_DRAIN) this.socket.destroy();
  }

  private bodyDone(req: IncomingRequest): void {
    this.startedAt = 0;
    if (this.draining) {
      this.draining = false;
      this.next();
    } else req.endBody();
  }

  /** The current request's answer ended (from OutgoingResponse.end). */
  answered(res: OutgoingResponse): void {
    if (res !== this.res) return;
    if (!res.keepAlive || this.socket.destroyed) {
      this.finish(res);
      this.endSoon();
      return;
    }
    const req = this.req!;
    if (!req.complete) {
      // The handler did not want the body: read and drop it (a client waiting for 100 Continue never sends it).
      const expect = req.headers.expect;
      if ((expect !== undefined && expect.toLowerCase() === "100-continue") || this.left > MAX_DRAIN) {
        this.finish(res);
        this.endSoon();
        return;
      }
      this.draining = true;
      this.drained = 0;
      this.finish(res);
      return;
    }
    this.finish(res);
    this.next();
  }

  private finish(res: OutgoingResponse): void {
    if (res.listenerCount("close") > 0) process.nextTick(() => res.emit("close"));
  }

  /** Ready for the next request: parses what is buffered (later, not inside the handler that answered). */
  private next(): void {
    this.req = undefined;
    this.res = undefined;
    this.headDone = false;
    this.idleSince = Date.now();
    if (this.socket.isPaused()) this.socket.resume();
    if (this.buf) {
      this.startedAt = Date.now();
      this.idleSince = 0;
      if (!this.parsing) setImmediate(() => this.parse());
    }
  }

  /**
   * Ends the connection after `last` (the answer was its last): a client that does not close its side within 5 s of
   * having been sent everything is disconnected (the server takes half-closed connections: one left open by the
   * client would otherwise hold its socket for ever).
   */
  private endSoon(last?: string): void {
    const grace = (): void => void setTimeout(() => this.socket.destroy(), END_GRACE_MS).unref();
    if (last === undefined) this.socket.end(grace);
    else this.socket.end(last, "latin1", grace);
  }

  /** Answers with the server's own refusal and closes. */
  refuse(status: 400 | 408 | 431, message: string, target = "/"): void {
    this.refused = true;
    this.buf = undefined;
    if (this.res?.headersSent || this.socket.destroyed) {
      this.socket.destroy();
      return;
    }
    if (this.res) {
      // the handler's answer, if it comes, has nowhere to go
      this.res.headersSent = true;
      this.res.writableEnded = true;
    }
    this.endSoon(this.server.options.refusal(status, message, target));
  }

  /** Applies the timeouts (called every second). */
  check(now: number): void {
    if (this.refused) return;
    if (this.idleSince > 0 && this.req === undefined && this.buf === undefined) {
      if (now - this.idleSince > this.server.options.keepAliveTimeoutMs) this.socket.destroy();
      return;
    }
    if (this.startedAt === 0) return;
    const o = this.server.options;
    if (now - this.startedAt > (this.headDone ? o.requestTimeoutMs : o.headersTimeoutMs))
      this.refuse(408, "the request was not received in time");
  }
}

/** A TCP server speaking HTTP/1.1 to `listener`. close() stops accepting; answers then close their connections. */
export class Http1Server extends net.Server {
  readonly options: Http1ServerOptions;
  readonly listener: RequestListener;
  readonly live = new Set<Connection>();
  closing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: Http1ServerOptions, listener: RequestListener) {
    super({ noDelay: true, allowHalfOpen: true });
    this.options = options;
    this.listener = listener;
    this.on("connection", (socket: net.Socket) => {
      if (this.closing) {
        socket.destroy();
        return;
      }
      this.live.add(new Connection(socket, this));
      this.timer ??= setInterval(this.check, CHECK_EVERY_MS).unref();
    });
  }

  private readonly check = (): void => {
    const now = Date.now();
    for (const c of this.live) c.check(now);
  };

  override close(callback?: (err?: Error) => void): this {
    this.closing = true;
    super.close(callback);
    return this;
  }

  /** Closes the connections without a request under way. */
  closeIdleConnections(): void {
    for (const c of this.live) if (c.idle) c.socket.destroy();
  }

  closeAllConnections(): void {
    for (const c of this.live) c.socket.destroy();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
