// The gateway's client-facing server, shared by `gantry gateway` (main.ts) and the one-app local gateway (local.ts):
// its own HTTP/1.1 server (http1-server.ts) with keep-alive longer than common load balancers' idle timeouts, bounded
// time for a client to send its request (a slowloris client gets 408 and is disconnected; answers such as streams and
// held requests may take as long as they need), `Expect: 100-continue` answered by the pipeline (gateway.ts sends 100
// only once a body is wanted), and the requests the server refuses itself (headers too large, malformed requests,
// timeouts) answered in the API's JSON shape.
import http from "node:http";
import { AppError, type ErrorCode } from "../common/errors.ts";
import type { GatewayConfig } from "./config.ts";
import { errorJson } from "./errors.ts";
import { Http1Server, type RequestListener } from "./http1-server.ts";
import { requestIds } from "./request-id.ts";
import { guessShape } from "./routing.ts";

const REFUSAL_CODE: Record<400 | 408 | 431, ErrorCode> = {
  400: "BAD_REQUEST",
  408: "REQUEST_TIMEOUT",
  431: "HEADERS_TOO_LARGE",
};

/**
 * The whole raw answer to a request the server refused, in the shape of the API its target names, with a request id
 * of its own (the request's X-Request-Id, if it sent one, is in the part that could not be read). Pure.
 */
export function refusalResponse(status: 400 | 408 | 431, message: string, target: string, requestId: string): string {
  const e = new AppError(REFUSAL_CODE[status], message);
  const body = errorJson(guessShape(target), e);
  return (
    `HTTP/1.1 ${e.status} ${http.STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  );
}

export function createGatewayServer(
  config: Pick<GatewayConfig, "clientTimeouts">,
  handler: RequestListener,
): Http1Server {
  const requestTimeoutMs = config.clientTimeouts.requestSeconds * 1000;
  const ids = requestIds();
  return new Http1Server(
    {
      keepAliveTimeoutMs: 65_000,
      requestTimeoutMs,
      headersTimeoutMs: Math.min(config.clientTimeouts.headersSeconds * 1000, requestTimeoutMs),
      refusal: (status, message, target) => refusalResponse(status, message, target, ids()),
    },
    handler,
  );
}
