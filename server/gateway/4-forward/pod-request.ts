// Step 4, forward: the request as a pod gets it, by the route table's body rules. An OpenAI stream that did not ask
// for usage gets `stream_options.include_usage` (so its tokens are metered; the usage-only event is taken out of the
// stream again), and an Ollama body loses its `keep_alive` (the app's spec says how long its model stays loaded: a
// caller's `keep_alive: 0` would unload the model every other caller uses). Everything else goes on as it came. Pure.
import type { RequestBody } from "../context.ts";
import type { ApiRoute } from "../routes.ts";

/** The body to send and whether the usage-only event is to be dropped from the answer. */
export function podBody(api: ApiRoute, body: RequestBody): { payload: Buffer | null; dropUsageEvent: boolean } {
  const { raw, json } = body;
  if (!json) return { payload: raw, dropUsageEvent: false };
  if (api.addsStreamUsage && json.stream === true) {
    const options = json.stream_options;
    // Asked for: passed on as it is. Turned off (include_usage: false) counts as not asked: the pod sends usage anyway
    // (to meter it) and the client does not see it.
    if (options && typeof options === "object" && (options as { include_usage?: unknown }).include_usage === true)
      return { payload: raw, dropUsageEvent: false };
    const kept = options && typeof options === "object" ? options : {};
    const payload = Buffer.from(JSON.stringify({ ...json, stream_options: { ...kept, include_usage: true } }));
    return { payload, dropUsageEvent: true };
  }
  if (api.dropsKeepAlive && Object.hasOwn(json, "keep_alive")) {
    const { keep_alive: _, ...rest } = json;
    return { payload: Buffer.from(JSON.stringify(rest)), dropUsageEvent: false };
  }
  return { payload: raw, dropUsageEvent: false };
}
