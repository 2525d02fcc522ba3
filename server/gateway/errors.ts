// The gateway's errors in the wire shape of the API a request is for: the OpenAI envelope under /v1 (and the
// management API), Anthropic's {"type": "error", "error"} under /v1/messages, Ollama's {"error": "..."} under /api.
// Streams that already started get the error as their last event instead (an SSE `data:` event, Anthropic's
// `event: error`, or an NDJSON line), since their status line is gone.
import type { ServerResponse } from "node:http";
import {
  AppError,
  anthropicErrorBody,
  anthropicErrorType,
  type ErrorCode,
  ollamaErrorBody,
  openaiErrorBody,
} from "../common/errors.ts";

export type ErrorShape = "ollama" | "openai" | "anthropic";

export const STATUS_CODE: Record<number, ErrorCode> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  413: "PAYLOAD_TOO_LARGE",
  429: "RATE_LIMITED",
  502: "UPSTREAM_FAILED",
  503: "APP_UNAVAILABLE",
  504: "UPSTREAM_TIMEOUT",
};

export function gatewayError(status: number, message: string, headers: Record<string, string> = {}): AppError {
  return new AppError(STATUS_CODE[status] ?? "INTERNAL", message, { headers });
}

const BODIES: Record<ErrorShape, (e: AppError) => unknown> = {
  ollama: ollamaErrorBody,
  openai: openaiErrorBody,
  anthropic: anthropicErrorBody,
};

export const errorJson = (shape: ErrorShape, e: AppError): string => JSON.stringify(BODIES[shape](e));

/** Sends an error response, or, when the response already started, ends it with an error event. */
export function sendGatewayError(
  res: ServerResponse,
  shape: ErrorShape,
  e: AppError,
  extraHeaders?: Record<string, string>,
  /** The content type of the response already started, if any. */
  sentType?: string,
): void {
  if (res.headersSent) {
    if (!res.writableEnded && !res.destroyed) {
      const type = sentType ?? String(res.getHeader("content-type") ?? "");
      if (type.includes("text/event-stream"))
        res.end(`${shape === "anthropic" ? "event: error\n" : ""}data: ${errorJson(shape, e)}\n\n`);
      else if (type.includes("ndjson")) res.end(`${errorJson(shape, e)}\n`);
      else res.end();
    }
    return;
  }
  const body = errorJson(shape, e);
  res.writeHead(e.status, {
    ...extraHeaders,
    ...e.headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * The error event that ends a stream already started (a held request committed to a stream) whose pod answered with
 * an error status: the pod's own message in the route's shape, an SSE event (Anthropic's `event: error`) or an
 * NDJSON line.
 */
export function streamErrorEvent(shape: ErrorShape, kind: "sse" | "ndjson", status: number, body: string): string {
  let message = `the app answered with status ${status}`;
  try {
    const e = (JSON.parse(body) as { error?: unknown }).error;
    if (typeof e === "string") message = e;
    else if (e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string")
      message = (e as { message: string }).message;
  } catch {
    /* not JSON: the generic message */
  }
  if (kind === "ndjson") return `${JSON.stringify({ error: message })}\n`;
  if (shape === "anthropic")
    return `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: anthropicErrorType(status), message } })}\n\n`;
  const type = status >= 500 ? "server_error" : "invalid_request_error";
  return `data: ${JSON.stringify({ error: { message, type, param: null, code: String(status) } })}\n\n`;
}
