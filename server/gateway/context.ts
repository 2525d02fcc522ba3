// One request to an app as the gateway's parts see it while it is served (dispatch.ts makes it; forward.ts,
// cold-start.ts and accounting.ts read and fill it).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Active, PrefixRoute } from "./3-route/app-state.ts";
import type { ErrorShape } from "./errors.ts";
import type { StreamKind } from "./3-route/hold.ts";

export interface RequestContext extends Active {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** When the request arrived (performance.now()). */
  t0: number;
  org: string;
  app: string;
  /** The path under the app (`/v1/chat/completions`), and the query string with its `?`. */
  rest: string;
  query: string;
  shape: ErrorShape;
  /** The caller's key id, "-" without one. */
  keyId: string;
  /** A held streaming request whose status line and keep-alives went out already. */
  committed?: StreamKind;
  /** Content type of the answer sent so far (an error then ends a stream with an error event of its kind). */
  sentType?: string;
  /** Time to the pod's first byte (ms since t0), once known. */
  ttfbMs?: number;
  /** Token counts metered from the answer (a lower bound when it broke off). */
  tokens?: { prompt: number; completion: number };
  /** PrefixHash's key of the request (its app routes by it), and whether its pod was the ring's first choice. */
  route?: PrefixRoute;
  /** The pod that answered (its name, else its address), for the access log and metrics. */
  pod?: string;
}
