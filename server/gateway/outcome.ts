// How a request to an app ended, as the steps report it (each returns an Outcome where it stops the request), and
// ANSWERS: the one table of what each outcome is answered with — its status and, unless the pod's answer went out,
// the gateway's error in the route's shape. Pure.
import { AppError } from "../common/errors.ts";
import type { RequestContext } from "./context.ts";
import { gatewayError } from "./errors.ts";

/** How a request ended. */
export type Outcome =
  | { kind: "no-app" }
  | { kind: "closing" }
  | { kind: "denied"; status: 401 | 403; message: string }
  | { kind: "limited"; message: string; headers: Record<string, string> }
  | { kind: "too-large"; max: number }
  /** The body nests deeper than the gateway reads (routes.ts MAX_BODY_DEPTH). */
  | { kind: "too-deep"; max: number }
  /** The client left before the answer was whole. */
  | { kind: "gone" }
  /** No pod to send it to: the app was deleted, cannot start, is over its hold cap, or did not start in time. */
  | { kind: "unavailable"; error: AppError }
  /** Every try found the pods refusing connections, for upstream.retrySeconds. */
  | { kind: "refused"; error: Error }
  /** The pod sent no answer head within upstream.headersTimeoutSeconds. */
  | { kind: "timeout"; error: Error }
  /** The pod's answer broke off (or the connection broke before it, twice). */
  | { kind: "broke"; error: Error }
  /** The pod's answer went out whole. */
  | { kind: "answered"; status: number };

export type Answer = { status: number; error?: AppError };
const unauthorized = { "www-authenticate": 'Key realm="gantry"' };

/** Each outcome's status and the gateway's error answer (none where the pod's answer went out or nobody listens). */
export const ANSWERS: { [K in Outcome["kind"]]: (o: Extract<Outcome, { kind: K }>, ctx: RequestContext) => Answer } = {
  "no-app": (_, c) => ({ status: 404, error: gatewayError(404, `no app "${c.app}" in org "${c.org}"`) }),
  closing: () => ({
    status: 503,
    error: new AppError("SHUTTING_DOWN", "the gateway is shutting down", {
      headers: { "retry-after": "1", connection: "close" },
    }),
  }),
  denied: (o) => ({ status: o.status, error: gatewayError(o.status, o.message, o.status === 401 ? unauthorized : {}) }),
  limited: (o) => ({ status: 429, error: gatewayError(429, o.message, o.headers) }),
  "too-large": (o) => ({
    status: 413,
    error: gatewayError(413, `request body is larger than ${o.max} bytes`, { connection: "close" }),
  }),
  "too-deep": (o) => ({
    status: 400,
    error: gatewayError(400, `request body nests objects and arrays deeper than ${o.max} levels`),
  }),
  gone: () => ({ status: 499 }),
  unavailable: (o) => ({ status: o.error.status, error: o.error }),
  refused: (o) => ({
    status: 502,
    error: gatewayError(502, `the app's pods refused the connection (${o.error.message})`),
  }),
  timeout: (o) => ({ status: 504, error: gatewayError(504, `the app did not answer in time (${o.error.message})`) }),
  broke: (o) => ({ status: 502, error: gatewayError(502, `the app's answer broke off: ${o.error.message}`) }),
  answered: (o) => ({ status: o.status }),
};

export const answerOf = (o: Outcome, ctx: RequestContext): Answer =>
  (ANSWERS[o.kind] as (o: Outcome, ctx: RequestContext) => Answer)(o, ctx);
