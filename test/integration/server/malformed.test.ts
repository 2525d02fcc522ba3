// Bad input, as users, broken clients and a fault harness send it: every case gets the right 4xx in the API's own error
// shape, never a 500 or a stack trace, and the server stays healthy afterwards.
//
// Adding a case is one line in `cases`: [name, "METHOD /path", body, status, words the error must mention, headers?].
// The body is JSON (any value), raw(text or bytes) sent as it is, or undefined for none; the method defaults to POST.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { encodePng, solidImage } from "../../support/images.ts";

let srv: TestServer;
before(async () => {
  // No remote image fetches: an http image URL is refused without any request leaving the machine.
  srv = await startTestServer({ env: { GANTRY_BODY_LIMIT: "1mb", GANTRY_ALLOW_REMOTE_IMAGES: "false" } });
  await createModel(srv.url, "tiny", await tinyModelPath());
});
after(async () => {
  await srv?.stop();
});

/** A body sent exactly as given (not JSON-encoded). */
class Raw {
  readonly body: string | Buffer;
  constructor(body: string | Buffer) {
    this.body = body;
  }
}
const raw = (body: string | Buffer): Raw => new Raw(body);

type Case = [
  name: string,
  route: string,
  body: unknown,
  status: number,
  mentions?: string,
  headers?: Record<string, string>,
];

const big = "x".repeat(1100 * 1024);
const gen = (extra: object) => ({ model: "tiny", prompt: "hi", stream: false, ...extra });
const chat = (extra: object) => ({ model: "tiny", messages: [{ role: "user", content: "hi" }], ...extra });
const v1chat = (extra: object) => ({
  model: "tiny",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 2,
  ...extra,
});
const jsonSchema = (schema: object) => ({ type: "json_schema", json_schema: { name: "answer", schema } });
/** A JSON schema nested `levels` deep (20,000 levels overflowed the stack of the schema check). */
const deepSchema = (levels: number) =>
  `{"type":"object","properties":{"a":`.repeat(levels) + "{}" + "}}".repeat(levels);
const gzip = { "Content-Encoding": "gzip" };
const host300 = `${"h".repeat(300)}.example.com`;
const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }];
const responses = (extra: object) => ({ model: "tiny", input: "hi", max_output_tokens: 2, ...extra });
const messages = (extra: object) => ({
  model: "tiny",
  max_tokens: 2,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});
const call = (call_id: string) => ({ type: "function_call", call_id, name: "lookup", arguments: "{}" });
const toolUse = (id: string) => ({ role: "assistant", content: [{ type: "tool_use", id, name: "lookup", input: {} }] });
const toolResult = (tool_use_id: string) => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id, content: "1" }],
});
const encodedPng = encodePng(solidImage(8, 8, [200, 10, 10])).toString("base64");
const png = (data: string) => ({ type: "image", source: { type: "base64", media_type: "image/png", data } });
const tool = (parameters: object) => ({ type: "function", function: { name: "lookup", parameters } });
/** A conversation whose assistant called lookup (id call_1). */
const called = [
  { role: "user", content: "hi" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{}" } }],
  },
];

// One line per case (Prettier leaves the table as written).
// prettier-ignore
const cases: Case[] = [
  // /api/generate
  ["generate: invalid JSON", "/api/generate", raw('{"model": "tiny",'), 400, "json"],
  ["generate: body is an array", "/api/generate", raw("[]"), 400, "object"],
  ["generate: empty body", "/api/generate", raw(""), 400, "model"],
  ["generate: missing model", "/api/generate", { prompt: "hi" }, 400, "model"],
  ["generate: model is a number", "/api/generate", { model: 5, prompt: "hi" }, 400, "model"],
  ["generate: model is null (null = absent)", "/api/generate", { model: null, prompt: "hi" }, 400, "model is required"],
  ["generate: unknown model", "/api/generate", gen({ model: "no-such-model" }), 404, "no-such-model"],
  ["generate: temperature is a string", "/api/generate", gen({ options: { temperature: "hot" } }), 400, "options.temperature"],
  ["generate: num_predict is fractional", "/api/generate", gen({ options: { num_predict: 1.5 } }), 400, "options.num_predict"],
  ["generate: top_p above 1", "/api/generate", gen({ options: { top_p: 2 } }), 400, "options.top_p"],
  ["generate: bad keep_alive", "/api/generate", gen({ keep_alive: "5 minutes" }), 400, "keep_alive"],
  ["generate: unknown format", "/api/generate", gen({ format: "xml" }), 400, "format"],
  ["generate: images not an array", "/api/generate", gen({ images: "abc" }), 400, "images"],
  ["generate: stream is a string", "/api/generate", gen({ stream: "yes" }), 400, "stream"],
  ["generate: raw is a string", "/api/generate", gen({ raw: "true" }), 400, "raw"],
  ["generate: prompt is an object", "/api/generate", gen({ prompt: { text: "hi" } }), 400, "prompt"],
  ["generate: stop is a number", "/api/generate", gen({ options: { stop: 3 } }), 400, "options.stop"],
  ["generate: body over the limit", "/api/generate", gen({ prompt: big }), 413, "larger"],
  ["generate: GET is not allowed", "GET /api/generate", undefined, 405, "GET"],
  ["generate: top_logprobs above 20", "/api/generate", gen({ logprobs: true, top_logprobs: 21 }), 400, "top_logprobs"],
  ["generate: context with an id past the vocabulary", "/api/generate", gen({ context: [1, 99_999_999] }), 400, "99999999"],
  ["generate: context with a negative id", "/api/generate", gen({ context: [-1] }), 400, "context"],
  ["generate: context in raw mode", "/api/generate", gen({ raw: true, context: [1, 2] }), 400, "raw mode"],
  ["generate: body that is not gzip", "/api/generate", raw("not gzip at all"), 400, "decompress", gzip],
  ["generate: gzip body cut short", "/api/generate", raw(gzipSync(JSON.stringify(gen({}))).subarray(0, 20)), 400, "decompress", gzip],
  ["generate: format nested 20,000 levels", "/api/generate", raw(`{"model":"tiny","prompt":"hi","format":${deepSchema(20_000)}}`), 400, "100 levels"],
  ["generate: pattern that is not a regex", "/api/generate", gen({ format: { type: "string", pattern: "([" } }), 400, "pattern"],
  ["generate: $ref to a missing definition", "/api/generate", gen({ format: { $ref: "#/$defs/nope" } }), 400, "$ref"],
  ["generate: enum with no values", "/api/generate", gen({ format: { type: "object", properties: { a: { enum: [] } } } }), 400, "enum"],
  // /api/chat
  ["chat: messages not an array", "/api/chat", chat({ messages: "hi" }), 400, "messages"],
  ["chat: no role", "/api/chat", chat({ messages: [{ content: "hi" }] }), 400, "messages.0.role"],
  ["chat: tool parameters not an object schema", "/api/chat", chat({ tools: [tool({ type: "string" })] }), 400, "tools.0.function.parameters"],
  ["chat: tool parameters of an unknown type", "/api/chat", chat({ tools: [tool({ type: "object", properties: { a: { type: "bogus" } } })] }), 400, "tools.0.function.parameters"],
  ["chat: tool name with a space", "/api/chat", chat({ tools: [{ type: "function", function: { name: "look up" } }] }), 400, "tools.0.function.name"],
  ["chat: tool call arguments not an object", "/api/chat", chat({ messages: [{ role: "assistant", content: "", tool_calls: [{ function: { name: "lookup", arguments: 5 } }] }] }), 400, "messages.0.tool_calls.0.function.arguments"],
  ["chat: think of an unknown level", "/api/chat", chat({ think: "extreme" }), 400, "think"],
  ["chat: content is a number", "/api/chat", chat({ messages: [{ role: "user", content: 42 }] }), 400, "messages.0.content"],
  ["chat: unknown model", "/api/chat", chat({ model: "ghost:7b" }), 404, "ghost"],
  ["chat: negative num_ctx", "/api/chat", chat({ options: { num_ctx: -5 } }), 400, "options.num_ctx"],
  ["chat: body that is not gzip", "/api/chat", raw("\x1f\x8b broken"), 400, "decompress", gzip],
  ["chat: format nested 20,000 levels", "/api/chat", raw(`{"model":"tiny","messages":[],"format":${deepSchema(20_000)}}`), 400, "100 levels"],
  // /api/embed, /api/embeddings
  // A missing input embeds nothing, as Ollama (test/go-client); one of another type is its 400.
  ["embed: input of another type", "/api/embed", { model: "tiny", input: 5 }, 400, "invalid input type"],
  ["embed: input is a number", "/api/embed", { model: "tiny", input: 7 }, 400, "input"],
  ["embeddings: missing prompt", "/api/embeddings", { model: "tiny" }, 400, "prompt"],
  // store routes
  ["show: missing model", "/api/show", {}, 400, "model"],
  ["show: unknown model", "/api/show", { model: "nope" }, 404, "nope"],
  ["delete: unknown model", "DELETE /api/delete", { model: "nope" }, 404, "nope"],
  ["copy: missing destination", "/api/copy", { source: "tiny" }, 400, "destination"],
  ["copy: unknown source", "/api/copy", { source: "nope", destination: "x" }, 404, "nope"],
  ["copy: host longer than a file name", "/api/copy", { source: "tiny", destination: `${host300}/ns/m:t` }, 400, "255 bytes"],
  ["create: GGUF path that does not exist", "/api/create", { model: "m", from: "/nonexistent/file.gguf", stream: false }, 400, "/nonexistent/file.gguf"],
  ["create: invalid model name", "/api/create", { model: "bad name!", from: "tiny", stream: false }, 400, "name"],
  ["create: host longer than a file name", "/api/create", { model: `${host300}/ns/m`, from: "tiny" }, 400, "255 bytes"],
  ["create: unclosed action in the template", "/api/create", { model: "t1", from: "tiny", template: "{{ .Prompt" }, 400, "unclosed action"],
  ["create: if without a condition", "/api/create", { model: "t2", from: "tiny", template: "{{ if }}x{{ end }}" }, 400, "missing value for if"],
  ["create: unclosed range", "/api/create", { model: "t3", from: "tiny", template: "{{ range .Messages }}{{ .Content }}" }, 400, "unclosed {{range}}"],
  ["create: unknown template function", "/api/create", { model: "t4", from: "tiny", template: "{{ shout .Prompt }}" }, 400, 'function "shout" not defined'],
  ["blobs: invalid digest", "/api/blobs/sha256:xyz", raw("data"), 400, "digest"],
  ["blobs: path traversal digest", "HEAD /api/blobs/..%2F..%2Fetc%2Fpasswd", undefined, 400],
  ["blobs: body does not match digest", `/api/blobs/sha256:${"0".repeat(64)}`, raw("not the right bytes"), 400, "digest"],
  ["unknown path", "GET /api/nope", undefined, 404],
  // OpenAI /v1
  ["v1 chat: invalid JSON", "/v1/chat/completions", raw("{nope"), 400, "json"],
  ["v1 chat: missing messages", "/v1/chat/completions", { model: "tiny" }, 400, "messages"],
  ["v1 chat: empty messages", "/v1/chat/completions", { model: "tiny", messages: [] }, 400, "messages"],
  ["v1 chat: n = 2", "/v1/chat/completions", v1chat({ n: 2 }), 400, "n"],
  ["v1 chat: temperature 3", "/v1/chat/completions", v1chat({ temperature: 3 }), 400, "temperature"],
  ["v1 chat: top_logprobs above 20", "/v1/chat/completions", v1chat({ logprobs: true, top_logprobs: 21 }), 400, "top_logprobs"],
  ["v1 chat: unknown response_format", "/v1/chat/completions", v1chat({ response_format: { type: "xml" } }), 400, "response_format"],
  ["v1 chat: image over http", "/v1/chat/completions", v1chat({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://example.invalid/cat.png" } }] }] }), 400, "image_url"],
  ["v1 chat: unknown model", "/v1/chat/completions", v1chat({ model: "gpt-9" }), 404, "gpt-9"],
  ["v1 chat: body that is not gzip", "/v1/chat/completions", raw("not gzip"), 400, "decompress", gzip],
  ["v1 chat: schema nested 20,000 levels", "/v1/chat/completions", raw(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${deepSchema(20_000)}}}}`), 400, "100 levels"],
  ["v1 chat: pattern that is not a regex", "/v1/chat/completions", v1chat({ response_format: jsonSchema({ type: "string", pattern: "a{2,1}" }) }), 400, "pattern"],
  ["v1 chat: $ref to a missing definition", "/v1/chat/completions", v1chat({ response_format: jsonSchema({ type: "object", properties: { a: { $ref: "#/$defs/gone" } } }) }), 400, "$ref"],
  ["v1 chat: enum with no values", "/v1/chat/completions", v1chat({ response_format: jsonSchema({ enum: [] }) }), 400, "enum"],
  ["v1 chat: tools the model cannot call", "/v1/chat/completions", v1chat({ tools, tool_choice: "auto" }), 400, "tiny:latest does not support tools"],
  ["v1 chat: tool parameters that are not a JSON schema", "/v1/chat/completions", v1chat({ tools: [tool({ type: "object", properties: { a: { $ref: "#/$defs/gone" } } })] }), 400, "tools.0.function.parameters"],
  ["v1 chat: two tools of one name", "/v1/chat/completions", v1chat({ tools: [...tools, ...tools] }), 400, "tools.1.function.name"],
  ["v1 chat: tool_choice names an unknown function", "/v1/chat/completions", v1chat({ tools, tool_choice: { type: "function", function: { name: "nope" } } }), 400, "tool_choice"],
  ["v1 chat: tool_choice required without tools", "/v1/chat/completions", v1chat({ tool_choice: "required" }), 400, "tool_choice"],
  ["v1 chat: tool_choice of an unknown kind", "/v1/chat/completions", v1chat({ tools, tool_choice: "always" }), 400, "tool_choice"],
  ["v1 chat: tool result for no call", "/v1/chat/completions", v1chat({ messages: [{ role: "user", content: "hi" }, { role: "tool", tool_call_id: "call_x", content: "42" }] }), 400, "messages.1.tool_call_id"],
  ["v1 chat: tool result without tool_call_id", "/v1/chat/completions", v1chat({ messages: [...called, { role: "tool", content: "42" }] }), 400, "messages.2.tool_call_id"],
  ["v1 chat: tool result of another call's id", "/v1/chat/completions", v1chat({ messages: [...called, { role: "tool", tool_call_id: "call_2", content: "42" }] }), 400, "messages.2.tool_call_id"],
  ["v1 chat: tool call arguments that are not JSON", "/v1/chat/completions", v1chat({ messages: [{ role: "user", content: "hi" }, { role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "lookup", arguments: "{oops" } }] }] }), 400, "messages.1.tool_calls.0.function.arguments"],
  ["v1 chat: reasoning_effort of an unknown level", "/v1/chat/completions", v1chat({ reasoning_effort: "extreme" }), 400, "reasoning_effort"],
  ["v1 completions: two prompts", "/v1/completions", { model: "tiny", prompt: ["a", "b"] }, 400, "prompt"],
  ["v1 embeddings: token arrays", "/v1/embeddings", { model: "tiny", input: [1, 2, 3] }, 400, "input"],
  ["v1 models: unknown id", "GET /v1/models/nope", undefined, 404, "nope"],
  ["v1 models: id that does not percent-decode", "GET /v1/models/%ff", undefined, 400, "decode"],
  ["show: model path that does not percent-decode", "GET /api/tags/%ff", undefined, 404],
  ["v1 chat: GET is not allowed", "GET /v1/chat/completions", undefined, 405],
  // OpenAI /v1/responses
  ["responses: invalid JSON", "/v1/responses", raw('{"model": "tiny", "input": '), 400, "json"],
  ["responses: missing input", "/v1/responses", { model: "tiny" }, 400, "input is required"],
  ["responses: input is a number", "/v1/responses", responses({ input: 7 }), 400, "input"],
  ["responses: unknown model", "/v1/responses", responses({ model: "gpt-9" }), 404, "gpt-9"],
  ["responses: previous_response_id (stateless)", "/v1/responses", responses({ previous_response_id: "resp_1" }), 400, "previous_response_id: not supported"],
  ["responses: an item_reference (stateless)", "/v1/responses", responses({ input: [{ type: "item_reference", id: "msg_1" }] }), 400, "input.0"],
  ["responses: an item of an unknown type", "/v1/responses", responses({ input: [{ type: "telepathy" }] }), 400, "input.0.type"],
  ["responses: an item without type or role", "/v1/responses", responses({ input: [{ content: "hi" }] }), 400, "input.0.type"],
  ["responses: a message content part of an unknown type", "/v1/responses", responses({ input: [{ role: "user", content: [{ type: "input_video" }] }] }), 400, "input.0.content.0.type"],
  ["responses: a function_call_output for no call", "/v1/responses", responses({ input: [{ type: "function_call_output", call_id: "call_9", output: "1" }] }), 400, "input.0.call_id"],
  ["responses: two calls with one call_id", "/v1/responses", responses({ input: ["hi", call("c1"), call("c1")].map((i) => (typeof i === "string" ? { role: "user", content: i } : i)) }), 400, "input.2.call_id"],
  ["responses: a function_call without a call_id", "/v1/responses", responses({ input: [{ type: "function_call", name: "lookup", arguments: "{}" }] }), 400, "input.0.call_id"],
  ["responses: a web_search tool", "/v1/responses", responses({ tools: [{ type: "web_search" }] }), 400, "tools.0.type"],
  ["responses: tools the model cannot call", "/v1/responses", responses({ tools: [{ type: "function", name: "lookup", parameters: { type: "object" } }] }), 400, "tiny:latest does not support tools"],
  ["responses: tool_choice naming no tool", "/v1/responses", responses({ tools: [{ type: "function", name: "lookup", parameters: { type: "object" } }], tool_choice: { type: "function", name: "search" } }), 400, "tool_choice"],
  ["responses: a tool's parameters that are no JSON schema", "/v1/responses", responses({ tools: [{ type: "function", name: "lookup", parameters: { type: "objekt" } }] }), 400, "tools.0.parameters"],
  ["responses: reasoning on a model without thinking", "/v1/responses", responses({ reasoning: { effort: "high" } }), 400, "does not support thinking"],
  ["responses: a reasoning effort that is no level", "/v1/responses", responses({ reasoning: { effort: "extreme" } }), 400, "reasoning.effort"],
  ["responses: text.format schema with an empty enum", "/v1/responses", responses({ text: { format: { type: "json_schema", name: "x", schema: { enum: [] } } } }), 400, "text.format.schema"],
  ["responses: an image over http", "/v1/responses", responses({ input: [{ role: "user", content: [{ type: "input_image", image_url: "http://example.invalid/cat.png" }] }] }), 400, "input.0.content.0.image_url"],
  ["responses: an image by file_id (stateless)", "/v1/responses", responses({ input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", image_url: "data:," }] }] }), 400, "input.0.content.0.file_id"],
  ["responses: max_output_tokens of 0", "/v1/responses", responses({ max_output_tokens: 0 }), 400, "max_output_tokens"],
  ["responses: background", "/v1/responses", responses({ background: true }), 400, "background"],
  ["responses: GET is not allowed", "GET /v1/responses", undefined, 405],
  // Anthropic /v1/messages
  ["messages: invalid JSON", "/v1/messages", raw("{nope"), 400, "json"],
  ["messages: missing max_tokens", "/v1/messages", { model: "tiny", messages: [{ role: "user", content: "hi" }] }, 400, "max_tokens is required"],
  ["messages: no messages", "/v1/messages", messages({ messages: [] }), 400, "messages"],
  ["messages: a system role in messages", "/v1/messages", messages({ messages: [{ role: "system", content: "hi" }] }), 400, "messages.0.role"],
  ["messages: a block of an unknown type", "/v1/messages", messages({ messages: [{ role: "user", content: [{ type: "video" }] }] }), 400, "messages.0.content.0.type"],
  ["messages: a text block without text", "/v1/messages", messages({ messages: [{ role: "user", content: [{ type: "text" }] }] }), 400, "messages.0.content.0.text"],
  ["messages: unknown model", "/v1/messages", messages({ model: "claude-9" }), 404, "claude-9"],
  ["messages: temperature above 1", "/v1/messages", messages({ temperature: 1.5 }), 400, "temperature"],
  ["messages: top_k negative", "/v1/messages", messages({ top_k: -1 }), 400, "top_k"],
  ["messages: a tool_result for no call", "/v1/messages", messages({ messages: [toolResult("toolu_1")] }), 400, "messages.0.content.0.tool_use_id"],
  ["messages: a tool_result for another call", "/v1/messages", messages({ messages: [{ role: "user", content: "hi" }, toolUse("toolu_1"), toolResult("toolu_2")] }), 400, "messages.2.content.0.tool_use_id"],
  ["messages: a tool_use never answered", "/v1/messages", messages({ messages: [{ role: "user", content: "hi" }, toolUse("toolu_1"), { role: "user", content: "go on" }] }), 400, "toolu_1"],
  ["messages: a tool_use id with a space", "/v1/messages", messages({ messages: [{ role: "user", content: "hi" }, toolUse("toolu 1")] }), 400, "messages.1.content.0.id"],
  ["messages: tool_use input that is not an object", "/v1/messages", messages({ messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: "x" }] }] }), 400, "messages.1.content.0.input"],
  ["messages: a server tool", "/v1/messages", messages({ tools: [{ type: "web_search_20250305", name: "web_search", input_schema: {} }] }), 400, "tools.0.type"],
  ["messages: a tool without input_schema", "/v1/messages", messages({ tools: [{ name: "lookup" }] }), 400, "tools.0.input_schema"],
  ["messages: tool_choice naming no tool", "/v1/messages", messages({ tools: [{ name: "lookup", input_schema: { type: "object" } }], tool_choice: { type: "tool", name: "search" } }), 400, "tool_choice"],
  ["messages: tool_choice any without tools", "/v1/messages", messages({ tool_choice: { type: "any" } }), 400, "tool_choice"],
  ["messages: an input_schema that is no JSON schema", "/v1/messages", messages({ tools: [{ name: "lookup", input_schema: { type: "objekt" } }] }), 400, "tools.0.input_schema"],
  ["messages: tools the model cannot call", "/v1/messages", messages({ tools: [{ name: "lookup", input_schema: { type: "object" } }] }), 400, "tiny:latest does not support tools"],
  ["messages: tool_choice of an unknown type", "/v1/messages", messages({ tool_choice: { type: "sometimes" } }), 400, "tool_choice.type"],
  ["messages: thinking on a model without it", "/v1/messages", messages({ thinking: { type: "enabled", budget_tokens: 2048 } }), 400, "does not support thinking"],
  ["messages: an image to a model without a projector", "/v1/messages", messages({ messages: [{ role: "user", content: [png(encodedPng)] }] }), 400, "does not support images"],
  ["messages: an image that is not base64", "/v1/messages", messages({ messages: [{ role: "user", content: [png("%%%")] }] }), 400, "messages.0.content.0.source"],
  ["messages: an image over http", "/v1/messages", messages({ messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "http://example.invalid/cat.png" } }] }] }), 400, "messages.0.content.0.source"],
  ["messages: mcp_servers", "/v1/messages", messages({ mcp_servers: [{ type: "url", url: "http://x", name: "x" }] }), 400, "mcp_servers"],
  ["messages: GET is not allowed", "GET /v1/messages", undefined, 405],
  ["messages: batches are not served", "/v1/messages/batches", {}, 404],
  ["count_tokens: no messages", "/v1/messages/count_tokens", { model: "tiny" }, 400, "messages"],
  ["count_tokens: unknown model", "/v1/messages/count_tokens", { model: "claude-9", messages: [{ role: "user", content: "hi" }] }, 404, "claude-9"],
];

for (const [name, route, body, status, mentions, headers] of cases) {
  test(name, async () => {
    const [method, p] = route.includes(" ") ? route.split(" ", 2) : ["POST", route];
    const init: RequestInit = { method, headers: { "Content-Type": "application/json", ...headers } };
    if (body instanceof Raw) init.body = body.body;
    else if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(srv.url + p, init);
    const text = await res.text();
    assert.equal(res.status, status, `status for ${name}: ${text}`);
    if (method === "HEAD") return;
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    const parsed = JSON.parse(text) as { error: unknown };
    let message: string;
    if (p!.startsWith("/v1/messages")) {
      const body = parsed as unknown as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, "error", `Anthropic error shape expected: ${text}`);
      assert.equal(typeof body.error.type, "string");
      message = body.error.message;
    } else if (p!.startsWith("/v1")) {
      const e = parsed.error as { message: string; type: string };
      assert.equal(typeof e, "object", `OpenAI error envelope expected: ${text}`);
      assert.equal(typeof e.message, "string");
      assert.equal(typeof e.type, "string");
      message = e.message;
    } else {
      assert.equal(typeof parsed.error, "string", `Ollama error shape expected: ${text}`);
      message = parsed.error as string;
    }
    assert.ok(message.length > 0);
    assert.doesNotMatch(message, /\n\s+at /, "no stack traces");
    if (mentions)
      assert.ok(message.toLowerCase().includes(mentions.toLowerCase()), `"${message}" should mention "${mentions}"`);
  });
}

test("refused creates stored nothing: no model, no blob", async () => {
  const blobs = fs.readdirSync(path.join(srv.modelsDir, "blobs")).sort();
  const bad = await fetch(`${srv.url}/api/create`, {
    method: "POST",
    body: JSON.stringify({ model: "never", from: await tinyModelPath({ seed: 7 }), template: "{{ if }}{{ end }}" }),
  });
  assert.equal(bad.status, 400);
  const names = ((await (await fetch(`${srv.url}/api/tags`)).json()) as { models: Array<{ name: string }> }).models;
  assert.deepEqual(
    names.map((m) => m.name),
    ["tiny:latest"],
  );
  assert.deepEqual(fs.readdirSync(path.join(srv.modelsDir, "blobs")).sort(), blobs, "no GGUF or template blob written");
});

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
