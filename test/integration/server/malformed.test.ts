// Bad input, as users and broken clients send it: every case gets the right 4xx in the API's own error shape, never
// a 500 or a stack trace, and the server stays healthy afterwards.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { tinyModelPath } from "../../support/models.ts";

let srv: TestServer;
before(async () => {
  srv = await startTestServer({ env: { GANTRY_BODY_LIMIT: "64kb" } });
  await createModel(srv.url, "tiny", await tinyModelPath());
});
after(async () => {
  await srv?.stop();
});

interface Case {
  name: string;
  method?: string;
  path: string;
  body?: unknown;
  /** Raw body text (sent as is). */
  raw?: string | Buffer;
  status: number;
  /** Text the error message must contain (case-insensitive), e.g. the field name. */
  mentions?: string;
}

const big = "x".repeat(70 * 1024);
const gen = (extra: object) => ({ model: "tiny", prompt: "hi", stream: false, ...extra });
const chat = (extra: object) => ({ model: "tiny", messages: [{ role: "user", content: "hi" }], ...extra });

const cases: Case[] = [
  // /api/generate
  { name: "generate: invalid JSON", path: "/api/generate", raw: '{"model": "tiny",', status: 400, mentions: "json" },
  { name: "generate: body is an array", path: "/api/generate", raw: "[]", status: 400, mentions: "object" },
  { name: "generate: empty body", path: "/api/generate", raw: "", status: 400, mentions: "model" },
  { name: "generate: missing model", path: "/api/generate", body: { prompt: "hi" }, status: 400, mentions: "model" },
  {
    name: "generate: model is a number",
    path: "/api/generate",
    body: { model: 5, prompt: "hi" },
    status: 400,
    mentions: "model",
  },
  {
    name: "generate: unknown model",
    path: "/api/generate",
    body: gen({ model: "no-such-model" }),
    status: 404,
    mentions: "no-such-model",
  },
  {
    name: "generate: temperature is a string",
    path: "/api/generate",
    body: gen({ options: { temperature: "hot" } }),
    status: 400,
    mentions: "options.temperature",
  },
  {
    name: "generate: num_predict is fractional",
    path: "/api/generate",
    body: gen({ options: { num_predict: 1.5 } }),
    status: 400,
    mentions: "options.num_predict",
  },
  {
    name: "generate: top_p above 1",
    path: "/api/generate",
    body: gen({ options: { top_p: 2 } }),
    status: 400,
    mentions: "options.top_p",
  },
  {
    name: "generate: bad keep_alive",
    path: "/api/generate",
    body: gen({ keep_alive: "5 minutes" }),
    status: 400,
    mentions: "keep_alive",
  },
  {
    name: "generate: unknown format",
    path: "/api/generate",
    body: gen({ format: "xml" }),
    status: 400,
    mentions: "format",
  },
  {
    name: "generate: images not an array",
    path: "/api/generate",
    body: gen({ images: "abc" }),
    status: 400,
    mentions: "images",
  },
  {
    name: "generate: stream is a string",
    path: "/api/generate",
    body: gen({ stream: "yes" }),
    status: 400,
    mentions: "stream",
  },
  {
    name: "generate: raw is a string",
    path: "/api/generate",
    body: gen({ raw: "true" }),
    status: 400,
    mentions: "raw",
  },
  {
    name: "generate: prompt is an object",
    path: "/api/generate",
    body: gen({ prompt: { text: "hi" } }),
    status: 400,
    mentions: "prompt",
  },
  {
    name: "generate: stop is a number",
    path: "/api/generate",
    body: gen({ options: { stop: 3 } }),
    status: 400,
    mentions: "options.stop",
  },
  {
    name: "generate: body over the limit",
    path: "/api/generate",
    body: gen({ prompt: big }),
    status: 413,
    mentions: "larger",
  },
  { name: "generate: GET is not allowed", method: "GET", path: "/api/generate", status: 405, mentions: "GET" },
  // /api/chat
  {
    name: "chat: messages not an array",
    path: "/api/chat",
    body: chat({ messages: "hi" }),
    status: 400,
    mentions: "messages",
  },
  {
    name: "chat: unknown role",
    path: "/api/chat",
    body: chat({ messages: [{ role: "wizard", content: "hi" }] }),
    status: 400,
    mentions: "messages.0.role",
  },
  {
    name: "chat: content is a number",
    path: "/api/chat",
    body: chat({ messages: [{ role: "user", content: 42 }] }),
    status: 400,
    mentions: "messages.0.content",
  },
  { name: "chat: unknown model", path: "/api/chat", body: chat({ model: "ghost:7b" }), status: 404, mentions: "ghost" },
  {
    name: "chat: negative num_ctx",
    path: "/api/chat",
    body: chat({ options: { num_ctx: -5 } }),
    status: 400,
    mentions: "options.num_ctx",
  },
  // /api/embed, /api/embeddings
  { name: "embed: missing input", path: "/api/embed", body: { model: "tiny" }, status: 400, mentions: "input" },
  {
    name: "embed: input is a number",
    path: "/api/embed",
    body: { model: "tiny", input: 7 },
    status: 400,
    mentions: "input",
  },
  {
    name: "embeddings: missing prompt",
    path: "/api/embeddings",
    body: { model: "tiny" },
    status: 400,
    mentions: "prompt",
  },
  // store routes
  { name: "show: missing model", path: "/api/show", body: {}, status: 400, mentions: "model" },
  { name: "show: unknown model", path: "/api/show", body: { model: "nope" }, status: 404, mentions: "nope" },
  {
    name: "delete: unknown model",
    method: "DELETE",
    path: "/api/delete",
    body: { model: "nope" },
    status: 404,
    mentions: "nope",
  },
  {
    name: "copy: missing destination",
    path: "/api/copy",
    body: { source: "tiny" },
    status: 400,
    mentions: "destination",
  },
  {
    name: "copy: unknown source",
    path: "/api/copy",
    body: { source: "nope", destination: "x" },
    status: 404,
    mentions: "nope",
  },
  {
    name: "create: GGUF path that does not exist",
    path: "/api/create",
    body: { model: "m", from: "/nonexistent/file.gguf", stream: false },
    status: 400,
    mentions: "/nonexistent/file.gguf",
  },
  {
    name: "create: invalid model name",
    path: "/api/create",
    body: { model: "bad name!", from: "tiny", stream: false },
    status: 400,
    mentions: "name",
  },
  {
    name: "blobs: invalid digest",
    method: "POST",
    path: "/api/blobs/sha256:xyz",
    raw: "data",
    status: 400,
    mentions: "digest",
  },
  { name: "blobs: path traversal digest", method: "HEAD", path: "/api/blobs/..%2F..%2Fetc%2Fpasswd", status: 400 },
  {
    name: "blobs: body does not match digest",
    method: "POST",
    path: `/api/blobs/sha256:${"0".repeat(64)}`,
    raw: "not the right bytes",
    status: 400,
    mentions: "digest",
  },
  { name: "unknown path", method: "GET", path: "/api/nope", status: 404 },
  // OpenAI /v1
  { name: "v1 chat: invalid JSON", path: "/v1/chat/completions", raw: "{nope", status: 400, mentions: "json" },
  {
    name: "v1 chat: missing messages",
    path: "/v1/chat/completions",
    body: { model: "tiny" },
    status: 400,
    mentions: "messages",
  },
  {
    name: "v1 chat: empty messages",
    path: "/v1/chat/completions",
    body: { model: "tiny", messages: [] },
    status: 400,
    mentions: "messages",
  },
  { name: "v1 chat: n = 2", path: "/v1/chat/completions", body: chat({ n: 2 }), status: 400, mentions: "n" },
  {
    name: "v1 chat: temperature 3",
    path: "/v1/chat/completions",
    body: chat({ temperature: 3 }),
    status: 400,
    mentions: "temperature",
  },
  {
    name: "v1 chat: logprobs",
    path: "/v1/chat/completions",
    body: chat({ logprobs: true }),
    status: 400,
    mentions: "logprobs",
  },
  {
    name: "v1 chat: unknown response_format",
    path: "/v1/chat/completions",
    body: chat({ response_format: { type: "xml" } }),
    status: 400,
    mentions: "response_format",
  },
  {
    name: "v1 chat: image over http",
    path: "/v1/chat/completions",
    body: chat({
      messages: [
        { role: "user", content: [{ type: "image_url", image_url: { url: "http://example.invalid/cat.png" } }] },
      ],
    }),
    status: 400,
    mentions: "image_url",
  },
  {
    name: "v1 chat: unknown model",
    path: "/v1/chat/completions",
    body: chat({ model: "gpt-9" }),
    status: 404,
    mentions: "gpt-9",
  },
  {
    name: "v1 completions: two prompts",
    path: "/v1/completions",
    body: { model: "tiny", prompt: ["a", "b"] },
    status: 400,
    mentions: "prompt",
  },
  {
    name: "v1 embeddings: token arrays",
    path: "/v1/embeddings",
    body: { model: "tiny", input: [1, 2, 3] },
    status: 400,
    mentions: "input",
  },
  { name: "v1 models: unknown id", method: "GET", path: "/v1/models/nope", status: 404, mentions: "nope" },
  { name: "v1 chat: GET is not allowed", method: "GET", path: "/v1/chat/completions", status: 405 },
];

for (const c of cases) {
  test(c.name, async () => {
    const method = c.method ?? "POST";
    const init: RequestInit = { method, headers: { "Content-Type": "application/json" } };
    if (c.raw !== undefined) init.body = c.raw;
    else if (c.body !== undefined) init.body = JSON.stringify(c.body);
    const res = await fetch(srv.url + c.path, init);
    const text = await res.text();
    assert.equal(res.status, c.status, `status for ${c.name}: ${text}`);
    if (method === "HEAD") return;
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    const body = JSON.parse(text) as { error: unknown };
    let message: string;
    if (c.path.startsWith("/v1")) {
      const e = body.error as { message: string; type: string };
      assert.equal(typeof e, "object", `OpenAI error envelope expected: ${text}`);
      assert.equal(typeof e.message, "string");
      assert.equal(typeof e.type, "string");
      message = e.message;
    } else {
      assert.equal(typeof body.error, "string", `Ollama error shape expected: ${text}`);
      message = body.error as string;
    }
    assert.ok(message.length > 0);
    assert.doesNotMatch(message, /\n\s+at /, "no stack traces");
    if (c.mentions)
      assert.ok(
        message.toLowerCase().includes(c.mentions.toLowerCase()),
        `"${message}" should mention "${c.mentions}"`,
      );
  });
}

test("the server is healthy and still serves after all bad requests", async () => {
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
  const res = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "tiny", prompt: "hello", stream: false, options: { num_predict: 4 } }),
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { done: boolean; eval_count: number };
  assert.equal(body.done, true);
  assert.ok(body.eval_count > 0);
  assert.doesNotMatch(srv.logs(), /"level":"(error|fatal)"/, "no request above logged an error");
});
