// The one place where thrown errors become HTTP responses, in the wire shape of the API the route belongs to.
import type { ErrorRequestHandler, Request, Response } from "express";
import {
  fromBodyParserError,
  ollamaErrorBody,
  openaiErrorBody,
  toAppError,
  type AppError,
  type ErrorCode,
} from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";

export type ErrorShape = "ollama" | "openai";

export function errorBody(shape: ErrorShape, e: AppError): unknown {
  return shape === "openai" ? openaiErrorBody(e) : ollamaErrorBody(e);
}

export function sendError(res: Response, shape: ErrorShape, e: AppError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
  res.status(e.status).json(errorBody(shape, e));
}

/** 5xx answers that are the server working as designed, not failures worth an error log. */
const EXPECTED_5XX = new Set<ErrorCode>(["SERVER_BUSY", "MODEL_LOADING", "SHUTTING_DOWN", "NOT_IMPLEMENTED"]);

export function errorMiddleware(shape: ErrorShape, logger: Logger): ErrorRequestHandler {
  return (err, req: Request, res: Response, _next) => {
    const e = fromBodyParserError(err) ?? toAppError(err);
    if (e.status >= 500 && !EXPECTED_5XX.has(e.code)) {
      logger.error({ err: e.cause ?? e, code: e.code, method: req.method, route: req.path }, "request failed");
    }
    sendError(res, shape, e);
  };
}
