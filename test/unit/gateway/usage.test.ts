import assert from "node:assert/strict";
import { test } from "node:test";
import {
  daysBetween,
  hourOf,
  mergeUsage,
  tokensOf,
  UsageEventFilter,
  UsageScanner,
  UsageTable,
} from "../../../server/gateway/5-account/usage.ts";
import { parseBody } from "../../../server/gateway/3-route/request-body.ts";
import type { RequestBody } from "../../../server/gateway/context.ts";
import { podBody } from "../../../server/gateway/4-forward/pod-request.ts";
import { apiRoute } from "../../../server/gateway/routes.ts";

/** The body a pod gets for a chat completion, when the gateway changed it to meter a stream's usage. */
function addStreamUsage(raw: Buffer): { body: Buffer } | undefined {
  const r = podBody(apiRoute("/v1/chat/completions")!, parseBody(raw) as RequestBody);
  return r.dropUsageEvent ? { body: r.payload! } : undefined;
}

const T = Date.parse("2026-05-01T10:30:00Z");

test("hourly rows per app and key add up; merging keeps the hours asked for", () => {
  const t = new UsageTable();
  const base = { org: "acme", app: "chat", keyId: "k1", promptTokens: 3, completionTokens: 5, durationMs: 10 };
  t.add({ ...base, status: 200, at: T });
  t.add({ ...base, status: 503, at: T + 60_000 });
  t.add({ ...base, keyId: "k2", status: 200, at: T });
  t.add({ ...base, status: 200, at: T + 3_600_000 });
  const rows = t.list();
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0], {
    hour: "2026-05-01T10:00:00.000Z",
    app: "chat",
    keyId: "k1",
    requests: 2,
    errors: 1,
    promptTokens: 6,
    completionTokens: 10,
    durationMs: 20,
    lastAt: "2026-05-01T10:31:00.000Z",
  });
  const merged = mergeUsage([rows, rows], Date.parse("2026-05-01T10:45:00Z"), Date.parse("2026-05-01T11:00:00Z"));
  assert.deepEqual(
    merged.map((r) => [r.keyId, r.requests]),
    [
      ["k1", 4],
      ["k2", 2],
    ],
  );
  assert.equal(hourOf(T), "2026-05-01T10:00:00.000Z");
  assert.deepEqual(daysBetween(Date.parse("2026-04-30T23:00:00Z"), Date.parse("2026-05-01T01:00:00Z")), [
    "2026-04-30",
    "2026-05-01",
  ]);
});

test("tokens from OpenAI usage and Ollama eval counts", () => {
  assert.deepEqual(tokensOf({ usage: { prompt_tokens: 4, completion_tokens: 9 } }), { prompt: 4, completion: 9 });
  assert.deepEqual(tokensOf({ done: true, prompt_eval_count: 7, eval_count: 2 }), { prompt: 7, completion: 2 });
  // Rerank answers (/v1/rerank, /api/rerank) are metered as prompt tokens.
  assert.deepEqual(tokensOf({ object: "list", usage: { prompt_tokens: 40, total_tokens: 40 }, results: [] }), {
    prompt: 40,
    completion: 0,
  });
  assert.deepEqual(tokensOf({ results: [], prompt_eval_count: 40 }), { prompt: 40, completion: 0 });
  assert.equal(tokensOf({ choices: [] }), undefined);
  assert.equal(tokensOf(null), undefined);
});

test("tokens from Anthropic Messages and Responses answers and their closing events", () => {
  const anthropic = { type: "message", content: [], usage: { input_tokens: 11, output_tokens: 5 } };
  assert.deepEqual(tokensOf(anthropic), { prompt: 11, completion: 5 });
  // Anthropic's input_tokens leave out the cached ones: the prompt is their sum.
  const cached = {
    usage: { input_tokens: 2, cache_read_input_tokens: 9, cache_creation_input_tokens: 0, output_tokens: 5 },
  };
  assert.deepEqual(tokensOf(cached), { prompt: 11, completion: 5 });
  const delta = {
    type: "message_delta",
    delta: { stop_reason: "end_turn" },
    usage: { input_tokens: 3, output_tokens: 4 },
  };
  assert.deepEqual(tokensOf(delta), { prompt: 3, completion: 4 });
  const response = { object: "response", usage: { input_tokens: 7, output_tokens: 2, total_tokens: 9 } };
  assert.deepEqual(tokensOf(response), { prompt: 7, completion: 2 });
  assert.deepEqual(tokensOf({ type: "response.completed", response }), { prompt: 7, completion: 2 });
  // response.created carries "usage": null: no counts yet.
  assert.equal(tokensOf({ type: "response.created", response: { usage: null } }), undefined);
});

test("the scanner reads the counts of streamed Messages and Responses answers; their deltas count when cut off", () => {
  const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const messages =
    event("message_start", { type: "message_start", message: { usage: { input_tokens: 0, output_tokens: 0 } } }) +
    event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "a" } }) +
    event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "b" } });
  const messagesEnd =
    event("message_delta", { type: "message_delta", delta: {}, usage: { input_tokens: 9, output_tokens: 2 } }) +
    event("message_stop", { type: "message_stop" });
  const responses =
    event("response.created", { type: "response.created", sequence_number: 0, response: { usage: null } }) +
    event("response.output_text.delta", { type: "response.output_text.delta", sequence_number: 1, delta: "a" });
  const responsesEnd = event("response.completed", {
    type: "response.completed",
    sequence_number: 2,
    response: { usage: { input_tokens: 4, output_tokens: 1 } },
  });
  const scan = (text: string) => {
    const s = new UsageScanner("text/event-stream");
    s.push(Buffer.from(text));
    return { end: s.end(), partial: s.partial() };
  };
  assert.deepEqual(scan(messages + messagesEnd).end, { prompt: 9, completion: 2 });
  assert.deepEqual(scan(responses + responsesEnd).end, { prompt: 4, completion: 1 });
  assert.deepEqual(scan(messages).partial, { prompt: 0, completion: 2 });
  assert.deepEqual(scan(responses).partial, { prompt: 0, completion: 1 });
});

test("the scanner reads counts from JSON, NDJSON and SSE answers split anywhere", () => {
  const feed = (type: string, text: string, cut: number) => {
    const s = new UsageScanner(type);
    const b = Buffer.from(text);
    for (let i = 0; i < b.length; i += cut) s.push(b.subarray(i, i + cut));
    return s.end();
  };
  const json = JSON.stringify({ choices: [{}], usage: { prompt_tokens: 2, completion_tokens: 3 } });
  const ndjson = `${JSON.stringify({ response: "a", done: false })}\n${JSON.stringify({ done: true, prompt_eval_count: 5, eval_count: 6 })}\n`;
  const sse = `data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":1}}\n\ndata: [DONE]\n\n`;
  for (const cut of [1, 7, 1000]) {
    assert.deepEqual(feed("application/json; charset=utf-8", json, cut), { prompt: 2, completion: 3 });
    assert.deepEqual(feed("application/x-ndjson", ndjson, cut), { prompt: 5, completion: 6 });
    assert.deepEqual(feed("text/event-stream", sse, cut), { prompt: 8, completion: 1 });
  }
  assert.equal(feed("text/plain", json, 10), undefined);
});

test("a stream that breaks off before its counts is metered by the token events that passed", () => {
  const partial = (type: string, text: string) => {
    const s = new UsageScanner(type);
    s.push(Buffer.from(text));
    return s.partial();
  };
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
  assert.deepEqual(partial("text/event-stream", chunk("a") + chunk("b") + chunk("c")), { prompt: 0, completion: 3 });
  // The finish chunk and [DONE] are not tokens.
  const finish = `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "length" }] })}\n\n`;
  assert.deepEqual(partial("text/event-stream", chunk("a") + finish + "data: [DONE]\n\n"), {
    prompt: 0,
    completion: 1,
  });
  const line = (response: string) => `${JSON.stringify({ model: "m", response, done: false })}\n`;
  assert.deepEqual(partial("application/x-ndjson", line("a") + line("b")), { prompt: 0, completion: 2 });
  assert.equal(partial("application/x-ndjson", ""), undefined);
  // When the pod's counts came, they are the answer.
  const done = `${JSON.stringify({ done: true, prompt_eval_count: 5, eval_count: 6 })}\n`;
  assert.deepEqual(partial("application/x-ndjson", line("a") + done), { prompt: 5, completion: 6 });
});

test("a streaming OpenAI request gets include_usage when it did not ask; the usage-only event is dropped again", () => {
  const asked = addStreamUsage(Buffer.from(JSON.stringify({ model: "m", stream: true, messages: [] })));
  assert.deepEqual(JSON.parse(asked!.body.toString()), {
    model: "m",
    stream: true,
    messages: [],
    stream_options: { include_usage: true },
  });
  // Turning usage off, or writing the key with escapes, does not turn metering off: the client still sees no usage.
  assert.deepEqual(
    JSON.parse(
      addStreamUsage(Buffer.from('{"stream":true,"stream_options":{"include_usage":false}}'))!.body.toString(),
    ),
    { stream: true, stream_options: { include_usage: true } },
  );
  assert.deepEqual(JSON.parse(addStreamUsage(Buffer.from('{"str\\u0065am":true}'))!.body.toString()), {
    stream: true,
    stream_options: { include_usage: true },
  });
  for (const body of [{ stream: false }, { model: "m" }, { stream: true, stream_options: { include_usage: true } }])
    assert.equal(addStreamUsage(Buffer.from(JSON.stringify(body))), undefined, JSON.stringify(body));
  assert.equal(addStreamUsage(Buffer.from('{"stream": tru')), undefined);

  const events = [
    'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
    'data: {"choices":[{"delta":{},"finish_reason":"length"}]}\n\n',
    'data: {"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n',
    "data: [DONE]\n\n",
  ];
  const whole = Buffer.from(events.join(""));
  for (const cut of [1, 5, whole.length]) {
    const f = new UsageEventFilter();
    let out = "";
    for (let i = 0; i < whole.length; i += cut) out += f.push(whole.subarray(i, i + cut));
    out += f.end();
    assert.equal(out, events[0]! + events[1]! + events[3]!);
  }
  const f = new UsageEventFilter();
  assert.equal(f.push(Buffer.from(events[0]!)), events[0], "an event passes as soon as it is complete");
});

test("durations are listed to the microsecond, without the noise of float sums", () => {
  const t = new UsageTable();
  const base = { org: "acme", app: "chat", keyId: "k1", promptTokens: 1, completionTokens: 1, status: 200, at: T };
  for (const durationMs of [0.1, 0.2, 3065.71257100002]) t.add({ ...base, durationMs });
  assert.equal(t.list()[0]!.durationMs, 3066.013);
});

test("rows keep the last request's time and the streamed answers' time to first token, merged across gateways", () => {
  const a = new UsageTable(),
    b = new UsageTable();
  const base = { org: "o", app: "chat", keyId: "k", status: 200, promptTokens: 1, completionTokens: 1, durationMs: 5 };
  a.add({ ...base, at: Date.parse("2026-11-27T10:05:00.400Z"), firstTokenMs: 30 });
  a.add({ ...base, at: Date.parse("2026-11-27T10:06:00Z") });
  b.add({ ...base, at: Date.parse("2026-11-27T10:20:00Z"), firstTokenMs: 50 });
  const [merged] = mergeUsage([a.list(), b.list()], 0, Date.parse("2026-11-28T00:00:00Z"));
  assert.equal(merged!.requests, 3);
  assert.equal(merged!.streamed, 2);
  assert.equal(merged!.firstTokenMs, 80);
  assert.equal(merged!.lastAt, "2026-11-27T10:20:00.000Z");
  assert.equal(a.list()[0]!.lastAt, "2026-11-27T10:06:00.000Z", "to the second");
  // A row stored before these fields existed merges with one that has them.
  const old = {
    hour: "2026-11-27T10:00:00.000Z",
    app: "chat",
    keyId: "k",
    requests: 1,
    errors: 0,
    promptTokens: 1,
    completionTokens: 1,
    durationMs: 1,
  };
  const [both] = mergeUsage([[old], a.list()], 0, Date.parse("2026-11-28T00:00:00Z"));
  assert.equal(both!.requests, 3);
  assert.equal(both!.streamed, 1);
});
