// fal's queue on the wire (docs.fal.ai model-endpoints/queue, checked against fal-client 1.0 and @fal-ai/client 1.10):
// the paths under the queue base, the submission answer, the status object, the webhook body, and what a job keeps
// in the broker. Pure.
import { z } from "zod";

export { QUEUE_PREFIX } from "../../common/queue-url.ts";

/** What a job holds in the broker: the request as the app gets it, and who sent it (never a key's secret). */
export const JobDataSchema = z.object({
  org: z.string(),
  app: z.string(),
  /** The path under the app (`/v1/chat/completions`) and the query string without fal_webhook. */
  rest: z.string(),
  query: z.string(),
  method: z.string(),
  contentType: z.string().optional(),
  /** The body, base64. */
  body: z.string(),
  /** The submitting key (its id, org and scope), none for a public app called without one. */
  key: z.object({ id: z.string(), org: z.string(), scope: z.enum(["api", "admin"]) }).optional(),
  /** The org that may read the request: the key's, or the app's without a key. */
  owner: z.string(),
  webhook: z.string().optional(),
  /** Epoch ms after which the request may no longer start (X-Fal-Request-Timeout). */
  startBy: z.number().optional(),
  noRetry: z.boolean(),
  /** X-Fal-Queue-Priority: "low" runs after every "normal" one waiting (the default). */
  priority: z.enum(["normal", "low"]).optional(),
  submittedAt: z.number(),
  cancelled: z.boolean().optional(),
});
export type JobData = z.infer<typeof JobDataSchema>;

/** What a finished run keeps: the app's answer (or the queue's error) to replay as the result. */
export const JobResultSchema = z.object({
  status: z.number(),
  contentType: z.string(),
  /** The body, base64. */
  body: z.string(),
  /** Set when the request failed: fal's error and error_type (X-Fal-Error-Type). */
  error: z.string().optional(),
  errorType: z.string().optional(),
  /** The user's X-Fal-Request-Timeout passed before it started (X-Fal-Request-Timeout-Type: user). */
  userTimeout: z.boolean().optional(),
  startedAt: z.number(),
  finishedAt: z.number(),
});
export type JobResult = z.infer<typeof JobResultSchema>;

export type QueueRoute =
  | { kind: "submit"; org: string; app: string; rest: string }
  | { kind: "status"; org: string; app: string; id: string; stream: boolean }
  | { kind: "result" | "cancel"; org: string; app: string; id: string }
  | { kind: "jwks" }
  | { kind: "error"; status: 404 | 405; message: string; allow?: string };

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ID = /^[0-9a-f-]{36}$/;

/** Where a request under the queue base goes: by method and the path below `/_queue`. Pure. */
export function queueRoute(method: string, path: string): QueueRoute {
  if (path === "/.well-known/jwks.json")
    return method === "GET" || method === "HEAD"
      ? { kind: "jwks" }
      : { kind: "error", status: 405, message: `method ${method} not allowed`, allow: "GET, HEAD" };
  const parts = path.split("/");
  const [, org = "", app = "", ...more] = parts;
  if (!LABEL.test(org) || !LABEL.test(app))
    return { kind: "error", status: 404, message: `${path} is not a queue URL: use /_queue/<org_id>/<app_id>/...` };
  if (more[0] === "requests" && more.length >= 2) {
    const id = more[1]!;
    const tail = more.slice(2).join("/");
    const want = (m: string, r: QueueRoute): QueueRoute =>
      method === m || (m === "GET" && method === "HEAD")
        ? r
        : { kind: "error", status: 405, message: `method ${method} not allowed`, allow: m };
    if (!ID.test(id)) return { kind: "error", status: 404, message: "Request not found" };
    if (tail === "") return want("GET", { kind: "result", org, app, id });
    if (tail === "status") return want("GET", { kind: "status", org, app, id, stream: false });
    if (tail === "status/stream") return want("GET", { kind: "status", org, app, id, stream: true });
    if (tail === "cancel") return want("PUT", { kind: "cancel", org, app, id });
    return { kind: "error", status: 404, message: `${path} not found` };
  }
  if (method !== "POST") return { kind: "error", status: 405, message: `method ${method} not allowed`, allow: "POST" };
  const rest = more.length === 0 ? "/" : `/${more.join("/")}`;
  return { kind: "submit", org, app, rest };
}

/** The query string without fal's own parameters (fal_webhook), with its `?` (or ""), and the webhook URL. */
export function splitQuery(query: string): { query: string; webhook: string | undefined } {
  if (query === "" || query === "?") return { query: "", webhook: undefined };
  const p = new URLSearchParams(query.slice(1));
  const webhook = p.get("fal_webhook") ?? undefined;
  p.delete("fal_webhook");
  const rest = p.toString();
  return { query: rest ? `?${rest}` : "", webhook };
}

/** The URLs of a request, as fal answers them: status, result and cancel leave the app's subpath out. */
export function requestUrls(base: string, org: string, app: string, id: string) {
  const r = `${base}/${org}/${app}/requests/${id}`;
  return { request_id: id, response_url: r, status_url: `${r}/status`, cancel_url: `${r}/cancel` };
}

/** X-Fal-Request-Timeout: seconds (fal's clients send a float above 1); undefined when absent or not a number. */
export function startTimeoutMs(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const s = Number(header);
  return Number.isFinite(s) && s > 0 ? Math.round(s * 1000) : undefined;
}

/** X-Fal-Queue-Priority (fal's clients send `normal` or `low`; absent is normal), or undefined when it is neither.
 * Pure. */
export function queuePriority(header: string | undefined): "normal" | "low" | undefined {
  const v = (header ?? "normal").trim().toLowerCase();
  return v === "normal" || v === "low" ? v : undefined;
}

/** fal's error body: `detail` is what both clients show, `error_type` what they expose as the error's type. */
export const falError = (detail: string, errorType?: string): string =>
  JSON.stringify({ detail, ...(errorType ? { error_type: errorType } : {}) });
