import assert from "node:assert/strict";
import { test } from "node:test";
import { keepAliveLine, streamKind } from "../../../server/gateway/3-route/hold.ts";
import { streamErrorEvent } from "../../../server/gateway/errors.ts";
import { apiRoute } from "../../../server/gateway/routes.ts";

const r = (path: string) => apiRoute(path)!;

test("which held requests stream, and how", () => {
  assert.equal(streamKind(r("/v1/chat/completions"), { stream: true }), "sse");
  assert.equal(streamKind(r("/v1/chat/completions"), {}), undefined);
  assert.equal(streamKind(r("/v1/completions"), { stream: true }), "sse");
  assert.equal(streamKind(r("/v1/responses"), { stream: true }), "sse");
  assert.equal(streamKind(r("/v1/messages"), { stream: true }), "sse");
  assert.equal(streamKind(r("/api/chat"), {}), "ndjson", "Ollama streams by default");
  assert.equal(streamKind(r("/api/generate"), { stream: false }), undefined);
  assert.equal(streamKind(r("/v1/models"), undefined), undefined);
  assert.equal(streamKind(r("/api/chat"), undefined), undefined, "a body that is not a JSON object");
});

test("keep-alive lines: an SSE comment; in NDJSON an empty chunk of the answer", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  assert.equal(keepAliveLine(r("/v1/chat/completions"), "sse", undefined, now), ": warming up\n\n");
  const chat = JSON.parse(keepAliveLine(r("/api/chat"), "ndjson", { model: "m" }, now)) as Record<string, unknown>;
  assert.deepEqual(chat, {
    model: "m",
    created_at: "2026-01-01T00:00:00.000Z",
    message: { role: "assistant", content: "" },
    done: false,
  });
  const gen = JSON.parse(keepAliveLine(r("/api/generate"), "ndjson", { model: "m" }, now)) as Record<string, unknown>;
  assert.equal(gen.response, "");
  assert.equal(gen.done, false);
});

test("a failed answer on a committed stream becomes its last event, in the route's shape", () => {
  assert.equal(
    streamErrorEvent("ollama", "ndjson", 404, '{"error":"model \\"x\\" not found"}'),
    '{"error":"model \\"x\\" not found"}\n',
  );
  const sse = streamErrorEvent("openai", "sse", 400, '{"error":{"message":"bad","type":"invalid_request_error"}}');
  assert.ok(sse.startsWith("data: ") && sse.endsWith("\n\n"));
  assert.equal((JSON.parse(sse.slice(6)) as { error: { message: string } }).error.message, "bad");
  assert.match(streamErrorEvent("ollama", "ndjson", 502, "<html>"), /status 502/);
  const anthropic = streamErrorEvent("anthropic", "sse", 400, '{"type":"error","error":{"message":"bad"}}');
  assert.ok(anthropic.startsWith("event: error\ndata: "));
  assert.deepEqual(JSON.parse(anthropic.slice("event: error\ndata: ".length)), {
    type: "error",
    error: { type: "invalid_request_error", message: "bad" },
  });
});
