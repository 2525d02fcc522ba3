// The translators of /v1/responses and /v1/messages onto chat completions, on OpenAI's wire format of what the chat
// completion sends (reasoning_content, content, tool_calls in fragments with index/id, finish_reason "tool_calls",
// usage): the streamed events, read back by the SDKs' own stream accumulators (openai's ResponseStream, Anthropic's
// MessageStream), and the whole answers; and the requests of a tool loop as the chat requests they become. The
// end-to-end runs through the real server are in test/integration/server/responses-messages.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Response } from "express";
import { MessageStream } from "@anthropic-ai/sdk/lib/MessageStream";
import { ResponseStream } from "openai/lib/responses/ResponseStream";
import { AppError } from "../../../server/common/errors.ts";
import { messagesAdapter } from "../../../server/http/anthropic/answer.ts";
import { MessagesRequestSchema } from "../../../server/http/anthropic/schemas.ts";
import { messagesToChat } from "../../../server/http/anthropic/to-chat.ts";
import { responsesAdapter } from "../../../server/http/openai/responses-answer.ts";
import { ResponsesRequestSchema } from "../../../server/http/openai/responses-schemas.ts";
import { responsesToChat } from "../../../server/http/openai/responses-to-chat.ts";
import type { AnswerAdapter } from "../../../server/http/respond.ts";

/** What a chat completion streams for: thinking, a sentence, then two tool calls with fragmented arguments. */
const delta = (d: object, finish: string | null = null) => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});
const CHUNKS = [
  delta({ role: "assistant", reasoning_content: "The user wants " }),
  delta({ reasoning_content: "the weather." }),
  delta({ content: "Let me look." }),
  delta({
    tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }],
  }),
  delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  delta({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  delta({
    tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } }],
  }),
  delta({}, "tool_calls"),
  {
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
  },
];
const FULL = {
  object: "chat.completion",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: "Let me look.",
        reasoning_content: "The user wants the weather.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      finish_reason: "tool_calls",
    },
  ],
  usage: { prompt_tokens: 20, completion_tokens: 30, total_tokens: 50 },
};

/** The SSE text an adapter writes for `chunks` (and an error after them, if given). */
function streamed(adapter: AnswerAdapter, chunks: object[], error?: AppError): string {
  let text = "";
  const res = {
    writableEnded: false,
    status: () => res,
    setHeader: () => res,
    flushHeaders: () => {},
    write: (s: string) => (text += s),
    end: () => void (res.writableEnded = true),
  };
  const out = adapter.stream(res as unknown as Response);
  for (const c of chunks) out.write(c);
  if (error) out.fail(error);
  out.end();
  assert.ok(res.writableEnded);
  return text;
}

/** SSE events as {event, data}; every event has both lines. */
const events = (sse: string) =>
  sse
    .split("\n\n")
    .filter(Boolean)
    .map((e) => {
      const m = /^event: (.+)\ndata: (.+)$/.exec(e);
      assert.ok(m, `a named event: ${e}`);
      return { event: m[1]!, data: JSON.parse(m[2]!) as { type: string } };
    });

/** The events' data as the newline-delimited JSON the SDKs' fromReadableStream reads. */
const jsonLines = (sse: string) =>
  new ReadableStream({
    start(c) {
      c.enqueue(
        new TextEncoder().encode(
          events(sse)
            .map((e) => `${JSON.stringify(e.data)}\n`)
            .join(""),
        ),
      );
      c.close();
    },
  });

const responsesRequest = ResponsesRequestSchema.parse({ model: "m", input: "weather?" });
const responses = () => responsesAdapter({ id: "resp_1", created_at: 1, request: responsesRequest });

test("Responses: thinking, text and two tool calls stream as items the openai SDK's ResponseStream assembles", async () => {
  const sse = streamed(responses(), CHUNKS);
  for (const e of events(sse)) assert.equal(e.event, e.data.type, "the event name is the type");
  const final = await ResponseStream.fromReadableStream(jsonLines(sse)).finalResponse();
  assert.equal(final.status, "completed");
  assert.deepEqual(
    final.output.map((o) => o.type),
    ["reasoning", "message", "function_call", "function_call"],
  );
  const [reasoning, , call, time] = final.output as [
    { content: Array<{ text: string }> },
    unknown,
    { call_id: string; name: string; arguments: string; status: string },
    { call_id: string; arguments: string },
  ];
  assert.equal(reasoning.content[0]!.text, "The user wants the weather.");
  assert.equal(final.output_text, "Let me look.");
  assert.deepEqual(
    [call.call_id, call.name, call.arguments, call.status],
    ["call_1", "get_weather", '{"city":"Paris"}', "completed"],
  );
  assert.deepEqual([time.call_id, time.arguments], ["call_2", "{}"]);
  assert.deepEqual([final.usage?.input_tokens, final.usage?.output_tokens], [20, 30]);
  const types = events(sse).map((e) => e.event);
  assert.ok(types.includes("response.function_call_arguments.delta"));
  assert.ok(types.includes("response.function_call_arguments.done"));
  assert.ok(types.includes("response.reasoning_text.delta"));
});

test("Responses: the whole answer has the same items; an error mid-stream is an error event the SDK throws", async () => {
  const r = responses().full(FULL) as { output: Array<{ type: string; arguments?: string }>; status: string };
  assert.deepEqual(
    r.output.map((o) => o.type),
    ["reasoning", "message", "function_call", "function_call"],
  );
  assert.equal(r.output[2]!.arguments, '{"city":"Paris"}');
  assert.equal(r.status, "completed");
  const failed = streamed(
    responses(),
    CHUNKS.slice(0, 3),
    new AppError("SHUTTING_DOWN", "the server is shutting down"),
  );
  const last = events(failed).at(-1)!;
  assert.deepEqual([last.event, (last.data as { code?: string }).code], ["error", "shutting_down"]);
  await assert.rejects(ResponseStream.fromReadableStream(jsonLines(failed)).finalResponse(), /shutting down/);
});

const messages = () => messagesAdapter("msg_1", "m");

test("Messages: thinking, text and two tool calls stream as blocks Anthropic's MessageStream assembles", async () => {
  const sse = streamed(messages(), CHUNKS);
  assert.deepEqual(
    events(sse)
      .map((e) => e.event)
      .filter((t) => t !== "content_block_delta"),
    [
      "message_start",
      "ping",
      ...Array<string[]>(4).fill(["content_block_start", "content_block_stop"]).flat(),
      "message_delta",
      "message_stop",
    ],
  );
  const stream = MessageStream.fromReadableStream(jsonLines(sse));
  const json: string[] = [];
  stream.on("inputJson", (partial) => json.push(partial));
  const final = await stream.finalMessage();
  assert.deepEqual(
    final.content.map((b) => b.type),
    ["thinking", "text", "tool_use", "tool_use"],
  );
  const [thinking, text, call, time] = final.content as unknown as [
    { thinking: string },
    { text: string },
    { id: string; name: string; input: unknown },
    { id: string; input: unknown },
  ];
  assert.equal(thinking.thinking, "The user wants the weather.");
  assert.equal(text.text, "Let me look.");
  assert.deepEqual([call.id, call.name, call.input], ["call_1", "get_weather", { city: "Paris" }]);
  assert.deepEqual([time.id, time.input], ["call_2", {}]);
  assert.deepEqual(json, ['{"city":', '"Paris"}', "{}"], "the arguments as they came");
  assert.equal(final.stop_reason, "tool_use");
  assert.deepEqual(final.usage.input_tokens, 20);
  assert.deepEqual(final.usage.output_tokens, 30);
});

test("Messages: the whole answer; an error mid-stream is Anthropic's error event, which the SDK throws", async () => {
  const m = messages().full(FULL) as { content: Array<{ type: string; input?: unknown }>; stop_reason: string };
  assert.deepEqual(
    m.content.map((b) => b.type),
    ["thinking", "text", "tool_use", "tool_use"],
  );
  assert.deepEqual(m.content[2]!.input, { city: "Paris" });
  assert.equal(m.stop_reason, "tool_use");
  const failed = streamed(messages(), CHUNKS.slice(0, 3), new AppError("SERVER_BUSY", "server busy"));
  const last = events(failed).at(-1)!;
  assert.deepEqual(last, {
    event: "error",
    data: { type: "error", error: { type: "overloaded_error", message: "server busy" } },
  });
});

/** The chat messages of an assistant turn that thought, said `content` and called get_weather, and the result. */
const calledAndAnswered = (id: string, content: string) => [
  {
    role: "assistant",
    content,
    reasoning_content: "Look it up.",
    tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
  },
  { role: "tool", tool_call_id: id, content: "sunny" },
];

test("a Messages tool loop becomes chat messages: tool_calls, tool messages before the user's text, reasoning", () => {
  const req = MessagesRequestSchema.parse({
    model: "m",
    max_tokens: 100,
    system: [{ type: "text", text: "Be brief." }],
    tools: [{ name: "get_weather", description: "Weather", input_schema: { type: "object" } }],
    tool_choice: { type: "any", disable_parallel_tool_use: true },
    thinking: { type: "enabled", budget_tokens: 8000 },
    stop_sequences: ["END"],
    top_k: 5,
    messages: [
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Look it up.", signature: "" },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Quick!" },
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] },
        ],
      },
    ],
  });
  const { chat, names } = messagesToChat(req);
  assert.deepEqual(chat, {
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "weather?" },
      ...calledAndAnswered("toolu_1", ""),
      { role: "user", content: "Quick!" },
    ],
    tools: [
      { type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object" } } },
    ],
    tool_choice: "required",
    parallel_tool_calls: false,
    reasoning_effort: "medium",
    truncate: false,
    max_completion_tokens: 100,
    stop: ["END"],
    top_k: 5,
    stream: false,
  });
  // Errors of the chat completion are told in the Messages request's names.
  assert.equal(names.of("messages.3.tool_call_id"), "messages.2.content.1.tool_use_id");
  assert.equal(names.of("messages.2.tool_calls.0.function.arguments"), "messages.1.content.1.input");
  assert.equal(names.of("tools.0.function.parameters"), "tools.0.input_schema");
  assert.equal(names.of("reasoning_effort"), "thinking");
  assert.equal(names.of("max_completion_tokens"), "max_tokens");
});

test("a Responses tool loop becomes chat messages: one assistant turn of reasoning, text and calls, then outputs", () => {
  const req = ResponsesRequestSchema.parse({
    model: "m",
    instructions: "Be brief.",
    tools: [{ type: "function", name: "get_weather", parameters: { type: "object" }, strict: true }],
    tool_choice: { type: "function", name: "get_weather" },
    reasoning: { effort: "low" },
    text: { format: { type: "json_schema", name: "w", schema: { type: "object" } } },
    input: [
      { role: "user", content: "weather?" },
      { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "Look it up." }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Looking." }] },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
    ],
  });
  const { chat, names } = responsesToChat(req);
  assert.deepEqual(chat, {
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "weather?" },
      ...calledAndAnswered("call_1", "Looking."),
    ],
    tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" }, strict: true } }],
    tool_choice: { type: "function", function: { name: "get_weather" } },
    response_format: { type: "json_schema", json_schema: { name: "w", schema: { type: "object" } } },
    reasoning_effort: "low",
    truncate: false,
    stream: false,
  });
  assert.equal(names.of("messages.2.tool_calls.0.function.arguments"), "input.3.arguments");
  assert.equal(names.of("messages.3.tool_call_id"), "input.4.call_id");
  assert.equal(names.of("tool_choice.function.name"), "tool_choice.name");
  assert.equal(names.of("response_format.json_schema.schema"), "text.format.schema");
});

test("thinking and effort as a reasoning effort, on both APIs", () => {
  const effort = (body: object) =>
    messagesToChat(
      MessagesRequestSchema.parse({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }], ...body }),
    ).chat.reasoning_effort;
  assert.equal(effort({}), undefined);
  assert.equal(effort({ thinking: { type: "enabled", budget_tokens: 1024 } }), "low");
  assert.equal(effort({ thinking: { type: "enabled", budget_tokens: 10_000 } }), "medium");
  assert.equal(effort({ thinking: { type: "enabled", budget_tokens: 32_000 } }), "high");
  assert.equal(effort({ thinking: { type: "disabled" } }), "none");
  assert.equal(effort({ thinking: { type: "adaptive" } }), "medium");
  assert.equal(effort({ thinking: { type: "adaptive" }, output_config: { effort: "low" } }), "low");
  assert.equal(effort({ output_config: { effort: "max" } }), "xhigh", "the highest level, Ollama's max");
  const responses = (e: string) =>
    responsesToChat(ResponsesRequestSchema.parse({ model: "m", input: "x", reasoning: { effort: e } })).chat
      .reasoning_effort;
  assert.deepEqual(["none", "minimal", "low", "xhigh"].map(responses), ["none", "minimal", "low", "xhigh"]);
});
