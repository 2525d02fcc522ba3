// Step 1, dispatch: which request goes where, from its method and request target. Pure: a decision out.
//
//   /<org_id>/<app_id>/<rest>     an app's API: <rest> is sent to a ready pod of ModelApp <app_id> in namespace
//                                 <org_id>, with the prefix stripped (only the routes of the route table pass)
//   /_gantry/v1/...               the gateway's own management API (management.ts)
//   /healthz /readyz /metrics     the gateway process
//
// org_id and app_id are Kubernetes names: DNS labels (RFC 1123), at most 63 characters.
import { isDnsLabel } from "../../common/kube-names.ts";
import type { ErrorShape } from "../errors.ts";
import { apiRoute, STORE_ROUTES, type ApiRoute } from "../routes.ts";

export type RouteDecision =
  | { kind: "app"; org: string; app: string; rest: string; query: string; api: ApiRoute }
  | { kind: "management"; rest: string; query: string }
  | { kind: "system"; path: "/healthz" | "/readyz" | "/metrics" }
  | { kind: "error"; status: 400 | 403 | 404 | 405; message: string; shape: ErrorShape; allow?: string };

const isMessages = (rest: string): boolean => rest === "/v1/messages" || rest.startsWith("/v1/messages/");

/**
 * The error shape of a path under an app: Anthropic's under /v1/messages, the OpenAI envelope elsewhere under /v1,
 * Ollama's {"error"} elsewhere.
 */
export const shapeOf = (rest: string): ErrorShape =>
  isMessages(rest) ? "anthropic" : rest === "/v1" || rest.startsWith("/v1/") ? "openai" : "ollama";

const wellEncoded = (s: string): boolean => {
  try {
    decodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
};

/**
 * The error shape for any request target, before (or without) knowing its org and app: Anthropic's for a
 * `/v1/messages` path, the OpenAI envelope when a `v1` segment is in the path or it is the management API, Ollama's
 * otherwise.
 */
export const guessShape = (target: string): ErrorShape =>
  /\/v1\/messages(?:[/?]|$)/.test(target)
    ? "anthropic"
    : target.startsWith("/_gantry") || /\/v1(?:[/?]|$)/.test(target)
      ? "openai"
      : "ollama";

/** The path and query of an absolute-form target (`http://host/path?q`, RFC 9112 §3.2.2); others unchanged. */
function originForm(target: string): string {
  const m = /^https?:\/\/[^/?#]*/i.exec(target);
  if (!m) return target;
  const rest = target.slice(m[0].length);
  return rest.charCodeAt(0) === 47 ? rest : `/${rest}`;
}

/** Decides what a request is from its method and request target (origin-form `/path?q`, or absolute-form). */
export function route(method: string, target: string): RouteDecision {
  const url = target.charCodeAt(0) === 47 ? target : originForm(target);
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? "" : url.slice(q);
  if (path === "/healthz" || path === "/readyz" || path === "/metrics") {
    if (method === "GET" || method === "HEAD") return { kind: "system", path };
    const message = `method ${method} not allowed on ${path}`;
    return { kind: "error", status: 405, message, shape: "ollama", allow: "GET, HEAD" };
  }
  if (path === "/_gantry" || path.startsWith("/_gantry/")) return { kind: "management", rest: path, query };
  // /<org>/<app><rest>
  const s1 = path.indexOf("/", 1);
  const s2 = s1 < 0 ? -1 : path.indexOf("/", s1 + 1);
  const org = s1 < 0 ? path.slice(1) : path.slice(1, s1);
  const app = s1 < 0 ? "" : s2 < 0 ? path.slice(s1 + 1) : path.slice(s1 + 1, s2);
  const rest = s2 < 0 ? "/" : path.slice(s2);
  if (!org || !app) return notAppUrl(path);
  if (!isDnsLabel(org))
    return { kind: "error", status: 404, message: `org "${org}" is not a valid org id`, shape: guessShape(path) };
  if (!isDnsLabel(app))
    return { kind: "error", status: 404, message: `app "${app}" is not a valid app id`, shape: guessShape(path) };
  const shape = shapeOf(rest);
  // Percent-encoding only where a name may need it (a model id in /v1/models/{id}), and well-formed: the pod routes
  // on the raw path and decodes the id.
  if (
    rest.includes("/../") ||
    rest.endsWith("/..") ||
    rest.includes("/./") ||
    rest.includes("//") ||
    (rest.includes("%") && (!rest.startsWith("/v1/models/") || !wellEncoded(rest)))
  )
    return { kind: "error", status: 400, message: `invalid path ${rest}`, shape };
  const api = apiRoute(rest);
  if (api) {
    const methods: readonly string[] = api.methods;
    if (methods.includes(method) || (method === "HEAD" && methods.includes("GET")))
      return { kind: "app", org, app, rest, query, api };
    return {
      kind: "error",
      status: 405,
      message: `method ${method} not allowed on ${rest}`,
      shape: api.shape,
      allow: methods.includes("GET") ? [...methods, "HEAD"].join(", ") : methods.join(", "),
    };
  }
  if (STORE_ROUTES.some((p) => rest === p || rest.startsWith(`${p}/`)))
    return {
      kind: "error",
      status: 403,
      message: `${rest} manages the app's model store and is not reachable through the gateway`,
      shape,
    };
  // /v1/chat/completions or /api/chat without the org and app (a client's base URL missing them): say so, not that
  // the app "v1" has no route "/completions".
  if (org === "v1" || org === "api") return notAppUrl(path);
  return { kind: "error", status: 404, message: `${method} ${rest} not found`, shape };
}

const notAppUrl = (path: string): RouteDecision => ({
  kind: "error",
  status: 404,
  message: `${path} is not an app's URL: use /<org_id>/<app_id>/v1/... or /<org_id>/<app_id>/api/...`,
  shape: guessShape(path),
});
