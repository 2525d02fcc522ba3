// Step 1, dispatch: where a request goes. CORS (preflights answered here), a request id, then target.ts's decision:
// an app's API (its route from routes.ts; pipeline.ts runs the later steps), the management API, the process's own
// /healthz, /readyz and /metrics, or an error in the API's shape.
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { originMatches } from "../../common/origins.ts";
import { givenRequestId } from "../../common/request-id.ts";
import { askForBody } from "../3-route/request-body.ts";
import type { GatewayConfig } from "../config.ts";
import type { RequestContext } from "../context.ts";
import type { ClientOf } from "./client.ts";
import { EXPOSED_HEADERS, preflightHeaders } from "./cors.ts";
import { gatewayError, sendGatewayError } from "../errors.ts";
import type { ManagementHandler } from "../management/management-api.ts";
import { guessShape, route } from "./target.ts";
import { QUEUE_PREFIX } from "../queue/wire.ts";

export type SystemPath = "/healthz" | "/readyz" | "/metrics";

export interface DispatchDeps {
  config: Pick<GatewayConfig, "corsOrigins" | "metricsListen">;
  newRequestId: () => string;
  /** Who a request's client is (config trustProxy). */
  clientOf: ClientOf;
  logger: Logger;
  management: ManagementHandler;
  /** Serves a request to an app (pipeline.ts, steps 2 to 5); settles when it ended. */
  serveApp(ctx: RequestContext): Promise<void>;
  system(path: SystemPath, res: ServerResponse): Promise<void>;
  /** fal's queue API (queue/service.ts), for paths under /_queue; none when the queue is off. */
  queue?: (req: IncomingMessage, res: ServerResponse, path: string, query: string, requestId: string) => void;
}

/**
 * What node's parser hands to the handler although the gateway must not serve it: an HTTP/0.9-style request line
 * (no version), and a request whose Transfer-Encoding does not end in chunked (node refuses its body only after the
 * handler has the head). Undefined for a request to serve. Pure.
 */
export function unservable(req: Pick<IncomingMessage, "httpVersionMajor" | "headers">): string | undefined {
  if (req.httpVersionMajor !== 1) return "a request line without HTTP/1.x";
  const te = req.headers["transfer-encoding"];
  if (te !== undefined && !/(?:^|,)[ \t]*chunked[ \t]*$/i.test(te)) return "a Transfer-Encoding other than chunked";
  return undefined;
}

/** The request listener of the gateway's address. */
export function dispatcher(d: DispatchDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const t0 = performance.now();
    const requestId = givenRequestId(req.headers["x-request-id"]) ?? d.newRequestId();
    const bad = unservable(req);
    if (bad !== undefined) {
      const e = gatewayError(400, `malformed HTTP request (${bad})`, { connection: "close" });
      sendGatewayError(res, guessShape(req.url ?? "/"), e, { "x-request-id": requestId });
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && originMatches(origin, d.config.corsOrigins)) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("vary", "Origin");
      res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
      if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
        res.writeHead(204, {
          ...preflightHeaders(req.headers["access-control-request-headers"]),
          "x-request-id": requestId,
        });
        res.end();
        return;
      }
    }
    const url = req.url ?? "/";
    if (d.queue && (url === QUEUE_PREFIX || url.startsWith(`${QUEUE_PREFIX}/`) || url.startsWith(`${QUEUE_PREFIX}?`))) {
      const q = url.indexOf("?");
      const path = q < 0 ? url : url.slice(0, q);
      d.queue(req, res, path.slice(QUEUE_PREFIX.length), q < 0 ? "" : url.slice(q), requestId);
      return;
    }
    const r = route(req.method ?? "GET", url);
    switch (r.kind) {
      case "app": {
        const { org, app, rest, query, api } = r;
        const shape = api.shape;
        const client = d.clientOf(req);
        const ctx: RequestContext = { req, res, requestId, t0, org, app, rest, query, api, shape, client, keyId: "-" };
        d.serveApp(ctx).catch((err: unknown) => {
          d.logger.error({ err: String(err), requestId }, "request failed");
          sendGatewayError(res, shape, gatewayError(502, "the request failed in the gateway"), {
            "x-request-id": requestId,
          });
        });
        return;
      }
      case "management":
        askForBody(req, res); // small JSON bodies, read by the handler: asked for at once
        d.management(req, res, r.rest, r.query, requestId).catch((err: unknown) => {
          d.logger.error({ err: String(err), requestId }, "management request failed");
          sendGatewayError(res, "openai", new AppError("INTERNAL", "internal error"), { "x-request-id": requestId });
        });
        return;
      case "system":
        if (r.path === "/metrics" && d.config.metricsListen) {
          sendGatewayError(res, "ollama", gatewayError(404, "/metrics is served on the metrics address"));
          return;
        }
        void d.system(r.path, res);
        return;
      case "error": {
        const headers: Record<string, string> = { "x-request-id": requestId };
        if (r.allow) headers.allow = r.allow;
        sendGatewayError(res, r.shape, gatewayError(r.status, r.message), headers);
        return;
      }
    }
  };
}

/** The request listener of the metrics address (config metricsListen): /metrics, /healthz, /readyz only. */
export function systemDispatcher(d: Pick<DispatchDeps, "system">): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path !== "/metrics" && path !== "/healthz" && path !== "/readyz")
      sendGatewayError(res, "ollama", gatewayError(404, `${path} not found`));
    else if (req.method === "GET" || req.method === "HEAD") void d.system(path, res);
    else
      sendGatewayError(res, "ollama", gatewayError(405, `method ${req.method} not allowed on ${path}`), {
        allow: "GET, HEAD",
      });
  };
}
