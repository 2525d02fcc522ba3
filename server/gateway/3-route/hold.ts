// Step 3, route: what a request held while its app scales from zero gets. Pure helpers over the route table: whether
// its answer streams (and how), and the keep-alive lines a held stream gets so that clients and proxies with idle
// timeouts do not give up while the app warms: an SSE comment (`: warming up`, ignored by every SSE parser) or, in
// NDJSON, an empty chunk of the answer (valid JSON every Ollama client reads and appends as nothing).
import type { ApiRoute } from "../routes.ts";

export type StreamKind = "sse" | "ndjson";

/** How the answer to a request on `api` with this parsed body will stream, or undefined for a single JSON answer. */
export function streamKind(api: ApiRoute, json: Record<string, unknown> | undefined): StreamKind | undefined {
  const style = api.stream;
  if (!style || !json) return undefined; // no body the pod can read: it answers 400
  if (style.when === "stream-true") return json.stream === true ? style.kind : undefined;
  return json.stream === false ? undefined : style.kind;
}

export const SSE_HEAD = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
export const NDJSON_HEAD = { "content-type": "application/x-ndjson" };

/** One keep-alive line for a held stream. */
export function keepAliveLine(
  api: ApiRoute,
  kind: StreamKind,
  json: Record<string, unknown> | undefined,
  now: Date,
): string {
  if (kind === "sse" || !api.ndjsonKeepAlive) return ": warming up\n\n";
  const model = typeof json?.model === "string" ? json.model : "";
  return api.ndjsonKeepAlive(model, now.toISOString());
}
