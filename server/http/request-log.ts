// One structured log line per request: method, route, status (499 when the client went away first), duration, and the
// caller's X-Request-Id (the gateway's, so a gateway log line finds the pod's). Never the body (prompts) nor other
// headers (keys). Probes (/health, /metrics) log at debug.
import type { RequestHandler } from "express";
import type { Logger } from "../common/logger.ts";
import { givenRequestId } from "../common/request-id.ts";

const QUIET = new Set(["/health", "/metrics", "/"]);

export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    // Read now: while a router mounted at /api or /v1 handles the request, req.path lacks that prefix.
    const path = req.path;
    const requestId = givenRequestId(req.headers["x-request-id"]);
    let logged = false;
    const log = (status: number) => {
      if (logged) return;
      logged = true;
      const entry = {
        method: req.method,
        path,
        status,
        ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
        ...(requestId ? { requestId } : {}),
      };
      if (QUIET.has(path)) logger.debug(entry, "request");
      else logger.info(entry, status === 499 ? "client closed the connection" : "request");
    };
    res.on("finish", () => log(res.statusCode));
    res.on("close", () => log(res.writableFinished ? res.statusCode : 499));
    next();
  };
}
