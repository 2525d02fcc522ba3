// The management API's routes of one app, /_gantry/v1/orgs/<org>/apps/<app>[/...]: its details (conditions and
// scaling bounds), new scaling bounds (PATCH), deletion, its pods' logs (NDJSON, followed while the client stays),
// and the console's playground, which sends /v1/chat/completions to the app through the gateway's own pipeline as
// the admin key (or session) that called, so no key ever sits in the page. management.ts has checked the admin key
// of the org and its limits before any of these run.
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import type { VerifiedKey } from "../2-authenticate/authorization.ts";
import type { AppAdmin } from "./app-admin.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse, readJson } from "./json-request.ts";
import { sendJson } from "./json-response.ts";
import type { AppInfo, AppSource } from "../ports.ts";
import { LogQuerySchema, ScaleRequestSchema } from "./schemas.ts";

export interface AppRouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  org: string;
  app: string;
  /** The path after /apps/<app> ("" for the app itself). */
  sub: string;
  /** The method, HEAD read as GET. */
  verb: string;
  params: Record<string, string>;
  requestId: string;
  key: VerifiedKey;
  /** Whether the caller's credentials (key or session) still hold (checked again while a log is followed). */
  stillAllowed(): Promise<boolean>;
  allow(methods: string[]): void;
}

/** Sends a request into the pipeline of an org's app, at `rest` under it, as made with `key` (the playground). */
export type ForwardToApp = (
  req: IncomingMessage,
  res: ServerResponse,
  org: string,
  app: string,
  rest: string,
  key: VerifiedKey,
) => void;

export interface AppRoutesDeps {
  apps: Pick<AppSource, "get">;
  admin?: AppAdmin;
  /** Sends the request into the app pipeline as `key` (the playground). */
  forwardToApp?: ForwardToApp;
  maxBodyBytes: number;
  logger: Logger;
  /** The app as the API shows it. */
  view(a: AppInfo): Record<string, unknown>;
  /** The app's latest queued requests; undefined when the gateway has no queue. */
  requests?: (org: string, app: string) => Promise<unknown[]> | undefined;
}

/** How often a followed log checks that its caller may still read it (a revoked key, an ended session). */
const RECHECK_MS = 2000;
const PLAYGROUND_ROUTES: ReadonlySet<string> = new Set(["/v1/chat/completions", "/v1/models"]);

export function createAppRoutes(d: AppRoutesDeps): (c: AppRouteContext) => Promise<void> {
  const admin = (): AppAdmin => {
    if (!d.admin) throw new AppError("NOT_IMPLEMENTED", "this gateway has no cluster to change apps in");
    return d.admin;
  };
  const mustGet = (org: string, app: string): AppInfo => {
    const a = d.apps.get(org, app);
    if (!a) throw new AppError("NOT_FOUND", `org "${org}" has no app "${app}"`);
    return a;
  };

  return async (c) => {
    const { org, app, res, requestId } = c;
    if (c.sub === "") {
      c.allow(["GET", "PATCH", "DELETE"]);
      if (c.verb === "GET") {
        const a = mustGet(org, app);
        const pulling = a.conditions?.some((x) => x.reason === "Pulling") && d.admin;
        const progress = pulling ? await d.admin!.pullProgress(org, app) : undefined;
        return sendJson(res, 200, { ...d.view(a), ...(progress ? { progress } : {}) }, requestId);
      }
      if (c.verb === "PATCH") {
        const body = parse(ScaleRequestSchema, await readJson(c.req, d.maxBodyBytes));
        const current = mustGet(org, app);
        const lo = body.minReplicas ?? current.minReplicas ?? 0,
          hi = body.maxReplicas ?? current.maxReplicas ?? 1;
        if (lo > hi)
          throw new AppError("BAD_REQUEST", `minReplicas ${lo} exceeds maxReplicas ${hi}`, { param: "minReplicas" });
        if (!(await admin().scale(org, app, body))) throw new AppError("NOT_FOUND", `org "${org}" has no app "${app}"`);
        d.logger.info({ org, app, minReplicas: lo, maxReplicas: hi, by: c.key.id }, "app scaled");
        return sendJson(res, 200, { ...d.view(current), minReplicas: lo, maxReplicas: hi }, requestId);
      }
      const current = mustGet(org, app);
      if (!(await admin().delete(org, app))) throw new AppError("NOT_FOUND", `org "${org}" has no app "${app}"`);
      d.logger.info({ org, app, by: c.key.id }, "app deleted");
      return sendJson(res, 202, { ...d.view(current), deleting: true }, requestId);
    }
    if (c.sub === "/requests") {
      c.allow(["GET"]);
      mustGet(org, app);
      const rows = d.requests?.(org, app);
      if (!rows) throw new AppError("NOT_IMPLEMENTED", "this gateway has no queue (queue.redisUrl is not set)");
      return sendJson(res, 200, { requests: await rows }, requestId);
    }
    if (c.sub === "/logs") {
      c.allow(["GET"]);
      return streamLogs(c);
    }
    if (PLAYGROUND_ROUTES.has(c.sub)) {
      c.allow(c.sub === "/v1/models" ? ["GET"] : ["POST"]);
      mustGet(org, app);
      if (!d.forwardToApp) throw new AppError("NOT_IMPLEMENTED", "this gateway cannot forward to apps");
      d.forwardToApp(c.req, res, org, app, c.sub, c.key);
      return;
    }
    throw new AppError("NOT_FOUND", `${c.req.method} ${c.req.url?.split("?")[0]} not found`);
  };

  async function streamLogs(c: AppRouteContext): Promise<void> {
    const q = parse(LogQuerySchema, c.params);
    const follow = q.follow === "true";
    mustGet(c.org, c.app);
    const ctl = new AbortController();
    const head = () => {
      if (c.res.headersSent) return;
      c.res.writeHead(200, {
        "content-type": "application/x-ndjson; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        "x-request-id": c.requestId,
      });
      c.res.flushHeaders();
    };
    const send = (obj: unknown) => {
      head();
      if (!c.res.writableEnded) c.res.write(`${JSON.stringify(obj)}\n`);
    };
    c.res.once("close", () => ctl.abort());
    // A followed log with nothing new yet shows as open; errors found before this (no app, no pods) get a status.
    const early = follow ? setTimeout(head, 500) : undefined;
    const recheck = follow
      ? setInterval(() => {
          void c.stillAllowed().then((ok) => {
            if (ok || ctl.signal.aborted) return;
            send({ error: "the session or key that opened this log is no longer valid" });
            ctl.abort();
          });
        }, RECHECK_MS)
      : undefined;
    try {
      await admin().logs(
        c.org,
        c.app,
        { tail: q.tail === undefined ? 100 : Number(q.tail), follow, container: q.container ?? "server" },
        (pod, line) => send({ pod, line }),
        ctl.signal,
      );
      head();
    } catch (e) {
      if (!c.res.headersSent) throw e; // answered with its status by management.ts
      send({ error: e instanceof Error ? e.message : String(e) });
    } finally {
      clearTimeout(early);
      clearInterval(recheck);
      if (c.res.headersSent && !c.res.writableEnded) c.res.end();
    }
  }
}
