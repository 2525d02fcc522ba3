// The management API under /_gantry/v1 (for the console, scripts and `gantry keys`): an org's keys (create, list
// without secrets, revoke), its apps with status and URL (and, in management-apps.ts, one app's details, scaling,
// deletion, logs and the console's playground), and its hourly usage. Every /orgs/<org>/ route needs an admin key of
// that org, or a console session made from one: an api key gets 403, another org's admin key 403, no key 401. The
// OpenAPI document (openapi.ts) is public; the console's pages and its session routes answer for themselves.
// Errors use the OpenAI envelope.
import { queueUrlOf } from "../../common/queue-url.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import { decideAdmin, type AuthFailure, type KeyCheck } from "../2-authenticate/authorization.ts";
import { parse, readJson } from "./json-request.ts";
import type { AppRouteContext } from "./app-api.ts";
import { gatewayError, sendGatewayError } from "../errors.ts";
import { parseExpiry, type KeyRecord } from "../2-authenticate/api-keys.ts";
import { limitRefusal, type LimitResult } from "../2-authenticate/limiter.ts";
import { sendJson } from "./json-response.ts";
import { openApiDocument } from "./openapi.ts";
import type { AppInfo, AppSource, KeyStore, UsageStore } from "../ports.ts";
import type { UsageRow } from "../5-account/usage.ts";
import { isDnsLabel } from "../../common/kube-names.ts";
import { CreateKeyRequestSchema, UsageQuerySchema, type KeyInfo } from "./schemas.ts";

export type ManagementHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: string,
  requestId: string,
) => Promise<void>;

export interface ManagementDeps {
  apps: Pick<AppSource, "list">;
  keys: Pick<KeyStore, "list" | "create" | "revoke">;
  usage?: Pick<UsageStore, "query">;
  /** Who the request acts as: its Authorization header, or its console session (CSRF checked there). */
  check: (req: IncomingMessage) => KeyCheck | Promise<KeyCheck>;
  /** The console: its pages and session routes (answered there; false for other paths), and revoked keys' sessions. */
  console?: {
    handle(req: IncomingMessage, res: ServerResponse, path: string, requestId: string): Promise<boolean>;
    keyRevoked(org: string, keyId: string): Promise<unknown>;
  };
  /** Routes of one app (management-apps.ts). */
  appRoutes?: (c: AppRouteContext) => Promise<void>;
  /** A slot under the admin key's request limits, as its calls to apps take (none: unlimited). */
  limit?: (key: { id: string; org: string }) => LimitResult;
  maxBodyBytes: number;
  logger: Logger;
  publicUrl?: string;
  /** fal's queue API is on: app objects carry their queueUrl. */
  queue?: boolean;
  /** Days of usage searched for a key's last use. */
  usageDays: number;
  now: () => number;
  onAuthFailure?: (reason: AuthFailure) => void;
}

const ORG_ROUTE = /^\/_gantry\/v1\/orgs\/([^/]+)\/(keys|apps|usage)(?:\/([^/]+)((?:\/[^/]+)*))?\/?$/;

/** A key without its secret; `expired` when its expiry has passed at `now` (ms). */
export const keyInfo = (r: KeyRecord, now: number): KeyInfo => ({
  id: r.id,
  org: r.org,
  scope: r.scope,
  name: r.name,
  created: r.created,
  ...(r.expires ? { expires: r.expires, ...(Date.parse(r.expires) <= now ? { expired: true } : {}) } : {}),
});

/**
 * A query string's parameters, each given once (a repeated one is refused rather than one of them silently used). An
 * offset's `+` left unencoded in a URL arrives as a space (`...T16:00:00 01:00`): it is read as the `+` it was.
 */
export function queryParams(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    if (Object.hasOwn(out, name)) throw new AppError("BAD_REQUEST", `${name} is given more than once`, { param: name });
    out[name] = value.replace(/^(\d{4}-\d\d-\d\dT[\d:.]+) (\d\d:\d\d)$/, "$1+$2");
  }
  return out;
}

/** When each key of the org last called an app, from the org's usage rows. */
function lastUsedByKey(rows: readonly UsageRow[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of rows) {
    // Rows written before lastAt existed count from their hour.
    const at = r.lastAt ?? r.hour;
    const have = out.get(r.keyId);
    if (have === undefined || at > have) out.set(r.keyId, at);
  }
  return out;
}

export function appInfo(a: AppInfo, publicUrl: string | undefined, queue = false) {
  const url = publicUrl ? `${publicUrl.replace(/\/+$/, "")}/${a.org}/${a.name}` : a.url;
  const queueUrl = queue && url ? queueUrlOf(url, a.org, a.name) : undefined;
  return {
    org: a.org,
    name: a.name,
    auth: a.auth,
    ...(a.model ? { model: a.model } : {}),
    ...(a.servedModel ? { servedModel: a.servedModel } : {}),
    ...(url ? { url } : {}),
    ...(queueUrl ? { queueUrl } : {}),
    ...(a.ready ? { ready: a.ready } : {}),
    ...(a.replicas !== undefined ? { replicas: a.replicas } : {}),
    ...(a.readyReplicas !== undefined ? { readyReplicas: a.readyReplicas } : {}),
    ...(a.minReplicas !== undefined ? { minReplicas: a.minReplicas } : {}),
    ...(a.maxReplicas !== undefined ? { maxReplicas: a.maxReplicas } : {}),
    ...(a.conditions ? { conditions: a.conditions } : {}),
    ...(a.deleting ? { deleting: true as const } : {}),
  };
}

export function createManagement(d: ManagementDeps): ManagementHandler {
  return async (req, res, path, query, requestId) => {
    const method = req.method ?? "GET";
    let release: (() => void) | undefined;
    try {
      if (path === "/_gantry/v1/openapi.json") {
        if (method !== "GET" && method !== "HEAD") throw new AppError("METHOD_NOT_ALLOWED", `use GET on ${path}`);
        sendJson(res, 200, openApiDocument(), requestId);
        return;
      }
      if (await d.console?.handle(req, res, path, requestId)) return;
      const m = ORG_ROUTE.exec(path);
      if (!m) throw new AppError("NOT_FOUND", `${method} ${path} not found`);
      const org = m[1]!,
        resource = m[2]!,
        id = m[3],
        sub = m[4] ?? "";
      if (!isDnsLabel(org)) throw new AppError("NOT_FOUND", `org "${org}" is not a valid org id`);
      if (sub && resource !== "apps") throw new AppError("NOT_FOUND", `${method} ${path} not found`);
      const decision = decideAdmin(org, await d.check(req));
      if (!decision.allow) {
        d.onAuthFailure?.(decision.reason);
        throw gatewayError(
          decision.status,
          decision.message,
          decision.status === 401 ? { "www-authenticate": 'Key realm="gantry"' } : {},
        );
      }
      // An admin key is held to the limits of its calls to apps: creating keys (Secrets) is not unbounded either.
      const l = decision.key && d.limit?.(decision.key);
      if (l && !l.ok) {
        const { message, headers } = limitRefusal(l);
        throw new AppError("RATE_LIMITED", message, { headers });
      }
      release = l?.release;
      // HEAD is served wherever GET is (RFC 9110 §9.3.2): the same head, no body.
      const verb = method === "HEAD" ? "GET" : method;
      const allow = (methods: string[]) => {
        if (!methods.includes(verb))
          throw new AppError("METHOD_NOT_ALLOWED", `method ${method} not allowed on ${path}`, {
            headers: { allow: (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ") },
          });
      };
      if (resource === "keys" && id === undefined) {
        allow(["GET", "POST"]);
        if (verb === "GET") {
          const now = d.now();
          const used = lastUsedByKey(d.usage?.query(org, now - d.usageDays * 86_400_000, now + 1) ?? []);
          const keys = d.keys.list(org).map((k) => {
            const lastUsed = used.get(k.id);
            return { ...keyInfo(k, now), ...(lastUsed ? { lastUsed } : {}) };
          });
          sendJson(res, 200, { keys }, requestId);
          return;
        }
        const body = parse(CreateKeyRequestSchema, await readJson(req, d.maxBodyBytes));
        let expires: Date | undefined;
        if (body.expires !== undefined) {
          try {
            expires = parseExpiry(body.expires, new Date(d.now()));
          } catch (e) {
            throw new AppError("BAD_REQUEST", (e as Error).message, { param: "expires" });
          }
        }
        const created = await d.keys.create(org, {
          scope: body.scope,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(expires ? { expires } : {}),
        });
        d.logger.info(
          { org, keyId: created.record.id, scope: created.record.scope, by: decision.key?.id },
          "key created",
        );
        sendJson(res, 201, { ...keyInfo(created.record, d.now()), key: created.key }, requestId);
        return;
      }
      if (resource === "keys" && id !== undefined) {
        allow(["DELETE"]);
        if (!(await d.keys.revoke(org, id))) throw new AppError("NOT_FOUND", `org "${org}" has no key "${id}"`);
        d.logger.info({ org, keyId: id, by: decision.key?.id }, "key revoked");
        // Its console sessions end now (they would fail their next check anyway, as the key is gone).
        await d.console?.keyRevoked(org, id).catch((err: unknown) => {
          d.logger.warn({ err: String(err), org, keyId: id }, "the revoked key's sessions were not removed");
        });
        res.writeHead(204, { "x-request-id": requestId });
        res.end();
        return;
      }
      if (resource === "apps" && id !== undefined && d.appRoutes && decision.key) {
        if (!isDnsLabel(id)) throw new AppError("NOT_FOUND", `app "${id}" is not a valid app id`);
        await d.appRoutes({
          req,
          res,
          org,
          app: id,
          sub,
          verb,
          params: queryParams(query),
          requestId,
          key: decision.key,
          stillAllowed: async () => {
            try {
              return decideAdmin(org, await d.check(req)).allow;
            } catch {
              return false;
            }
          },
          allow,
        });
        return;
      }
      if (resource === "apps" && id === undefined) {
        allow(["GET"]);
        const apps = d.apps
          .list(org)
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((a) => appInfo(a, d.publicUrl, d.queue === true));
        sendJson(res, 200, { apps }, requestId);
        return;
      }
      if (resource === "usage" && id === undefined) {
        allow(["GET"]);
        const q = parse(UsageQuerySchema, queryParams(query));
        const to = q.to ? Date.parse(q.to) : d.now();
        const from = q.from ? Date.parse(q.from) : to - 86_400_000;
        if (!(from < to)) throw new AppError("BAD_REQUEST", "from must be before to", { param: "from" });
        if (to - from > 366 * 86_400_000)
          throw new AppError("BAD_REQUEST", "at most a year at a time", { param: "from" });
        const usage = d.usage?.query(org, from, to) ?? [];
        sendJson(
          res,
          200,
          { org, from: new Date(from).toISOString(), to: new Date(to).toISOString(), usage },
          requestId,
        );
        return;
      }
      throw new AppError("NOT_FOUND", `${method} ${path} not found`);
    } catch (err) {
      const e =
        err instanceof AppError
          ? err
          : (d.logger.error({ err: String(err), requestId }, "management request failed"),
            new AppError("INTERNAL", "internal error"));
      sendGatewayError(res, "openai", e, { "x-request-id": requestId });
    } finally {
      release?.();
    }
  };
}
