// One request to an app as the gateway's steps see it while it is served: 1-dispatch makes it, the later steps read
// and fill it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Active, PrefixRoute } from "./3-route/app-state.ts";
import type { ErrorShape } from "./errors.ts";
import type { StreamKind } from "./3-route/hold.ts";
import type { Client } from "./1-dispatch/client.ts";
import type { ApiRoute } from "./routes.ts";

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
  /** Its route in the route table, and that route's error shape. */
  api: ApiRoute;
  shape: ErrorShape;
  /** Who the client is (its address and scheme, as far as the trusted proxies say). */
  client: Client;
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

/** A request's body as the gateway reads it, once (3-route/request-body.ts). */
export interface RequestBody {
  /** The bytes as the client sent them; null without a body (GET, HEAD). */
  raw: Buffer | null;
  /** The body parsed, when it is a JSON object; undefined otherwise (the pod answers a body it cannot read). */
  json: Record<string, unknown> | undefined;
}
