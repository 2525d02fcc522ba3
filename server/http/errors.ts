// The one place where thrown errors become HTTP responses, in the wire shape of the API the route belongs to.
import type { ErrorRequestHandler, Request, Response } from "express";
import {
  anthropicErrorBody,
  fromBodyParserError,
  isServerFault,
  ollamaErrorBody,
  openaiErrorBody,
  toAppError,
  type AppError,
} from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";

export type ErrorShape = "ollama" | "openai" | "anthropic";

export function errorBody(shape: ErrorShape, e: AppError): unknown {
  if (shape === "anthropic") return anthropicErrorBody(e);
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

/** Logs an answered error when the catalogue calls its code a server fault (before or in the middle of a response). */
export function logFault(logger: Logger, e: AppError, req: Request): void {
  if (isServerFault(e.code))
    logger.error(
      { err: e.cause ?? e, code: e.code, method: req.method, route: req.baseUrl + req.path },
      "request failed",
    );
}

/** The error handler of one API: every error its routes throw is answered in that API's shape. */
export function errorMiddleware(shape: ErrorShape, logger: Logger): ErrorRequestHandler {
  return (err, req: Request, res: Response, _next) => {
    const e = fromBodyParserError(err) ?? toAppError(err);
    logFault(logger, e, req);
    sendError(res, shape, e);
  };
}
