import assert from "node:assert/strict";
import { test } from "node:test";
import { keepAliveLine, streamErrorEvent, streamKind } from "../../../server/gateway/3-route/hold.ts";

const b = (o: unknown) => Buffer.from(JSON.stringify(o));

test("which held requests stream, and how", () => {
  assert.equal(streamKind("/v1/chat/completions", b({ stream: true })), "sse");
  assert.equal(streamKind("/v1/chat/completions", b({})), undefined);
  assert.equal(streamKind("/v1/completions", b({ stream: true })), "sse");
  assert.equal(streamKind("/api/chat", b({})), "ndjson", "Ollama streams by default");
  assert.equal(streamKind("/api/generate", b({ stream: false })), undefined);
  assert.equal(streamKind("/v1/models", null), undefined);
  assert.equal(streamKind("/api/chat", Buffer.from("{nope")), undefined);
});

test("keep-alive lines: an SSE comment; in NDJSON an empty chunk of the answer", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  assert.equal(keepAliveLine("sse", "/v1/chat/completions", null, now), ": warming up\n\n");
  const chat = JSON.parse(keepAliveLine("ndjson", "/api/chat", b({ model: "m" }), now)) as Record<string, unknown>;
  assert.deepEqual(chat, {
    model: "m",
    created_at: "2026-01-01T00:00:00.000Z",
    message: { role: "assistant", content: "" },
    done: false,
  });
  const gen = JSON.parse(keepAliveLine("ndjson", "/api/generate", b({ model: "m" }), now)) as Record<string, unknown>;
  assert.equal(gen.response, "");
  assert.equal(gen.done, false);
});

test("a failed answer on a committed stream becomes its last event", () => {
  assert.equal(
    streamErrorEvent("ndjson", 404, '{"error":"model \\"x\\" not found"}'),
    '{"error":"model \\"x\\" not found"}\n',
  );
  const sse = streamErrorEvent("sse", 400, '{"error":{"message":"bad","type":"invalid_request_error"}}');
  assert.ok(sse.startsWith("data: ") && sse.endsWith("\n\n"));
  assert.equal((JSON.parse(sse.slice(6)) as { error: { message: string } }).error.message, "bad");
  assert.match(streamErrorEvent("ndjson", 502, "<html>"), /status 502/);
});
