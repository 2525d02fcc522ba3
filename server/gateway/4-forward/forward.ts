// Step 4, forward: one try of a request on one pod (proxy.ts streams the pod's answer into the client's response),
// and what its result means for the request.
import type { AppError } from "../../common/errors.ts";
import type { RequestBody, RequestContext } from "../context.ts";
import type { Outcome } from "../outcome.ts";
import type { Endpoint } from "../ports.ts";
import { podBody } from "./pod-request.ts";
import { upstreamHeaders, type ForwardOptions, type ProxyOutcome, type Upstreams } from "./proxy.ts";

export type PodRequest = Omit<ForwardOptions, "committed">;

/** What is sent to whichever pod takes the request (the same for every try). */
export function podRequest(ctx: RequestContext, body: RequestBody): PodRequest {
  const { req, api } = ctx;
  const { payload, dropUsageEvent } = podBody(api, body);
  return {
    method: req.method ?? "GET",
    path: ctx.rest + ctx.query,
    headers: upstreamHeaders(req.rawHeaders, ctx.requestId, ctx.client),
    body: payload,
    requestId: ctx.requestId,
    dropUsageEvent,
    meter: api.metered,
    shape: api.shape,
    sink: ctx,
  };
}

/** One try on one pod. */
export async function attempt(
  upstreams: Upstreams,
  ctx: RequestContext,
  ep: Endpoint,
  o: PodRequest,
): Promise<ProxyOutcome> {
  ctx.pod = ep.pod ?? ep.id;
  const f = upstreams.forward(ep.origin, ctx.res, { ...o, committed: ctx.committed });
  ctx.forwarding = f;
  if (ctx.cause) f.abort(ctx.cause.message);
  try {
    return await f.done;
  } finally {
    ctx.forwarding = undefined;
  }
}

/** A pod's last outcome as the request's. Pure. */
export function fromPod(o: ProxyOutcome, cause: AppError | undefined): Outcome {
  switch (o.kind) {
    case "done":
      return { kind: "answered", status: o.status };
    case "refused":
    case "timeout":
      return { kind: o.kind, error: o.error };
    case "reset":
    case "failed":
      return { kind: "broke", error: o.error };
    case "aborted":
      return cause ? { kind: "unavailable", error: cause } : { kind: "gone" };
  }
}
