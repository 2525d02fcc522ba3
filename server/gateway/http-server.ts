// The gateway's node:http server, shared by `gantry gateway` (main.ts) and the one-app local gateway (local.ts):
// keep-alive longer than common load balancers' idle timeouts, bounded time for a client to send its request (a
// slowloris client gets 408 and is disconnected; answers such as streams and held requests may take as long as they
// need), `Expect: 100-continue` answered by the pipeline (gateway.ts sends 100 only once a body is wanted), and the
// errors node's parser raises (headers too large, malformed requests, timeouts) answered in the API's JSON shape.
import http from "node:http";
import type { Duplex } from "node:stream";
import { AppError, type ErrorCode } from "../common/errors.ts";
import type { GatewayConfig } from "./config.ts";
import { errorJson } from "./errors.ts";
import { guessShape } from "./routing.ts";

/** How often node checks connections against the client timeouts (its default, 30 s, would let them overrun). */
const CHECK_EVERY_MS = 1000;

/** A parser error's status, code and message. Pure. */
export function clientErrorAnswer(code: string | undefined): { code: ErrorCode; message: string } | undefined {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { code: "HEADERS_TOO_LARGE", message: "the request line or headers are too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "REQUEST_TIMEOUT", message: "the request was not received in time" };
    case "ECONNRESET":
    case "EPIPE":
      return undefined; // the client is gone: nobody to answer
    default:
      return { code: "BAD_REQUEST", message: `malformed HTTP request (${code ?? "parse error"})` };
  }
}

/** The whole raw HTTP answer to a request node's parser refused, in the shape of the API its path names. Pure. */
export function clientErrorResponse(code: string | undefined, rawPacket: Buffer | undefined): string | undefined {
  const a = clientErrorAnswer(code);
  if (!a) return undefined;
  const target = /^[A-Z]+ (\S+)/.exec(rawPacket?.subarray(0, 2048).toString("latin1") ?? "")?.[1] ?? "/";
  const e = new AppError(a.code, a.message);
  const body = errorJson(guessShape(target), e);
  return (
    `HTTP/1.1 ${e.status} ${http.STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

export function createGatewayServer(
  config: Pick<GatewayConfig, "clientTimeouts">,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): http.Server {
  const requestTimeout = config.clientTimeouts.requestSeconds * 1000;
  const server = http.createServer(
    {
      keepAliveTimeout: 65_000,
      requestTimeout,
      headersTimeout: Math.min(config.clientTimeouts.headersSeconds * 1000, requestTimeout),
      connectionsCheckingInterval: CHECK_EVERY_MS,
    },
    handler,
  );
  // The pipeline decides when to ask for the body: a request refused before (401, 404, 413) is never uploaded.
  server.on("checkContinue", handler);
  server.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    const started = (socket as { _httpMessage?: http.ServerResponse })._httpMessage?.headersSent === true;
    const answer = socket.writable && !started ? clientErrorResponse(err.code, err.rawPacket) : undefined;
    if (answer) socket.end(answer);
    else socket.destroy();
  });
  return server;
}
