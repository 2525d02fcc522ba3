// Requests held while their app scales from zero. Pure helpers: whether a request streams (and how), and the
// keep-alive lines a held stream gets so that clients and proxies with idle timeouts do not give up while the app
// warms: an SSE comment (`: warming up`, ignored by every SSE parser) or, in NDJSON, an empty chunk of the answer
// (valid JSON every Ollama client reads and appends as nothing).

export type StreamKind = "sse" | "ndjson";

/** How the answer to `rest` with this body will stream, or undefined for a single JSON answer. */
export function streamKind(rest: string, body: Buffer | null): StreamKind | undefined {
  const openai = rest === "/v1/chat/completions" || rest === "/v1/completions";
  const ollama = rest === "/api/chat" || rest === "/api/generate";
  if (!openai && !ollama) return undefined;
  let stream: unknown;
  let parsed: unknown;
  try {
    parsed = body && body.length ? JSON.parse(body.toString("utf8")) : {};
  } catch {
    return undefined; // the pod answers 400
  }
  if (parsed && typeof parsed === "object") stream = (parsed as { stream?: unknown }).stream;
  if (openai) return stream === true ? "sse" : undefined;
  return stream === false ? undefined : "ndjson";
}

export const SSE_HEAD = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
export const NDJSON_HEAD = { "content-type": "application/x-ndjson" };

/** One keep-alive line for a held stream. */
export function keepAliveLine(kind: StreamKind, rest: string, body: Buffer | null, now: Date): string {
  if (kind === "sse") return ": warming up\n\n";
  let model = "";
  try {
    const m = (JSON.parse(body?.toString("utf8") ?? "{}") as { model?: unknown }).model;
    if (typeof m === "string") model = m;
  } catch {
    /* streamKind already parsed it */
  }
  const created_at = now.toISOString();
  return rest === "/api/chat"
    ? `${JSON.stringify({ model, created_at, message: { role: "assistant", content: "" }, done: false })}\n`
    : `${JSON.stringify({ model, created_at, response: "", done: false })}\n`;
}

/** The error event that ends a committed stream whose pod answered with an error status. */
export function streamErrorEvent(kind: StreamKind, status: number, body: string): string {
  let message = `the app answered with status ${status}`;
  try {
    const e = (JSON.parse(body) as { error?: unknown }).error;
    if (typeof e === "string") message = e;
    else if (e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string")
      message = (e as { message: string }).message;
  } catch {
    /* not JSON: the generic message */
  }
  return kind === "sse"
    ? `data: ${JSON.stringify({ error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", param: null, code: String(status) } })}\n\n`
    : `${JSON.stringify({ error: message })}\n`;
}
