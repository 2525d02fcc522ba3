// The gateway's client-facing server, shared by `gantry gateway` (main.ts) and the one-app local gateway (local.ts):
// node:http (llhttp, strict: never insecureHTTPParser) with the limits of the gateway config: the time a client has to
// send its headers and its whole request (slowloris: 408, then the connection is closed; answers such as streams and
// held requests take what they need), idle keep-alive, the size of a request head (431) and the connections one
// address may hold (503). `Expect: 100-continue` goes to the pipeline, which sends 100 only once it wants the body.
// Requests node refuses itself are answered in the API's JSON shape (docs/gateway.md, "What node:http answers").
import http from "node:http";
import type net from "node:net";
import type { Duplex } from "node:stream";
import { AppError, type ErrorCode } from "../common/errors.ts";
import type { GatewayConfig } from "./config.ts";
import { errorJson } from "./errors.ts";
import { requestIds } from "./1-dispatch/request-id.ts";
import { guessShape } from "./1-dispatch/target.ts";

export type RequestListener = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** The status node's default answer would have, as a gateway error code and message. Pure. */
export function clientErrorAnswer(
  code: string | undefined,
  reason: string | undefined,
): { code: ErrorCode; message: string } | undefined {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { code: "HEADERS_TOO_LARGE", message: "the request line, headers or trailers are too large" };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { code: "PAYLOAD_TOO_LARGE", message: "the request's chunk extensions are too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "REQUEST_TIMEOUT", message: "the request was not received in time" };
    case "ECONNRESET":
    case "EPIPE":
      return undefined; // the client is gone: nobody to answer
    default:
      return { code: "BAD_REQUEST", message: `malformed HTTP request (${reason ?? code ?? "parse error"})` };
  }
}

/**
 * The whole raw answer to a request refused before it had a request object, in the shape of the API its target
 * names, with a request id of its own (the request's X-Request-Id, if it sent one, is in what was refused). Pure.
 */
export function refusalResponse(e: AppError, target: string, requestId: string): string {
  const body = errorJson(guessShape(target), e);
  const extra = Object.entries(e.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return (
    `HTTP/1.1 ${e.status} ${http.STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`
  );
}

/** The request target at the start of what node's parser refused ("/" when it cannot be read). */
const targetOf = (raw: Buffer | undefined): string =>
  /^[A-Z]+ (\S+)/.exec(raw?.subarray(0, 2048).toString("latin1") ?? "")?.[1] ?? "/";

export interface GatewayServerOptions {
  /** Counts connections refused by the per-address cap (metrics). */
  onRefusedConnection?: () => void;
}

export function createGatewayServer(
  config: Pick<GatewayConfig, "clientTimeouts" | "clientLimits">,
  handler: RequestListener,
  opts: GatewayServerOptions = {},
): http.Server {
  const t = config.clientTimeouts;
  const requestTimeout = t.requestSeconds * 1000;
  const headersTimeout = Math.min(t.headersSeconds * 1000, requestTimeout);
  const server = http.createServer(
    {
      keepAliveTimeout: t.keepAliveSeconds * 1000,
      requestTimeout,
      headersTimeout,
      // node checks the timeouts on this interval (30 s by default, which would let a short timeout overrun).
      connectionsCheckingInterval: Math.max(10, Math.min(1000, headersTimeout / 4)),
      maxHeaderSize: config.clientLimits.maxHeaderBytes,
      insecureHTTPParser: false,
      requireHostHeader: true,
    },
    oneAtATime(handler),
  );
  // The pipeline decides when to ask for the body: a request refused before (401, 404, 413) is never uploaded.
  server.on("checkContinue", server.listeners("request")[0] as RequestListener);
  const ids = requestIds();
  server.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: Buffer; reason?: string }, socket: Duplex) => {
    const started = (socket as { _httpMessage?: http.ServerResponse })._httpMessage?.headersSent === true;
    const a = socket.writable && !started ? clientErrorAnswer(err.code, err.reason) : undefined;
    if (a) socket.end(refusalResponse(new AppError(a.code, a.message), targetOf(err.rawPacket), ids()));
    else socket.destroy();
  });
  capConnectionsPerAddress(server, config.clientLimits.connectionsPerAddress, ids, opts.onRefusedConnection);
  return server;
}

/** Pipelined requests parsed and waiting on one connection past which node stops reading it. */
const MAX_QUEUED = 16;

interface Turns {
  busy: boolean;
  paused: boolean;
  queue: Array<[http.IncomingMessage, http.ServerResponse]>;
}
const TURNS = Symbol("gantry.turns");

/**
 * Pipelined requests are handled one at a time per connection, each once the answer before it is whole: node calls the
 * handler for every request it parsed and keeps their answers in memory until the client reads, so a client that
 * pipelines hundreds of requests and reads nothing would have the gateway make every answer. Past MAX_QUEUED waiting
 * requests the connection is not read until they are served.
 */
function oneAtATime(handler: RequestListener): RequestListener {
  const run = (t: Turns, req: http.IncomingMessage, res: http.ServerResponse): void => {
    t.busy = true;
    res.once("close", () => next(t, req.socket));
    handler(req, res);
  };
  const next = (t: Turns, socket: net.Socket): void => {
    t.busy = false;
    if (socket.destroyed) {
      t.queue.length = 0;
      return;
    }
    if (t.paused && t.queue.length <= MAX_QUEUED / 2) {
      t.paused = false;
      socket.resume();
    }
    const waiting = t.queue.shift();
    if (waiting) run(t, ...waiting);
  };
  return (req, res) => {
    const socket = req.socket as net.Socket & { [TURNS]?: Turns };
    const t = (socket[TURNS] ??= { busy: false, paused: false, queue: [] });
    if (!t.busy) return run(t, req, res);
    t.queue.push([req, res]);
    if (t.queue.length >= MAX_QUEUED && !t.paused) {
      t.paused = true;
      socket.pause();
    }
  };
}

/**
 * Connections beyond `max` from one address get 503 and are closed before node's HTTP machinery sees them: node's own
 * connection listener is wrapped, so no request of a refused connection is ever parsed or handled.
 */
function capConnectionsPerAddress(server: http.Server, max: number, ids: () => string, onRefused?: () => void): void {
  if (max <= 0) return;
  const listeners = server.listeners("connection");
  if (listeners.length !== 1) throw new Error("node:http's connection listener was not found");
  const accept = listeners[0] as (socket: net.Socket) => void;
  server.removeAllListeners("connection");
  const open = new Map<string, number>();
  server.on("connection", (socket: net.Socket) => {
    const addr = socket.remoteAddress ?? "";
    const n = open.get(addr) ?? 0;
    if (n >= max) {
      onRefused?.();
      const e = new AppError("SERVER_BUSY", `too many connections from ${addr} (at most ${max})`, {
        headers: { "retry-after": "5" },
      });
      socket.on("error", () => undefined);
      socket.end(refusalResponse(e, "/", ids()));
      socket.setTimeout(1000, () => socket.destroy());
      return;
    }
    open.set(addr, n + 1);
    socket.once("close", () => {
      const left = (open.get(addr) ?? 1) - 1;
      if (left === 0) open.delete(addr);
      else open.set(addr, left);
    });
    accept.call(server, socket);
  });
}
