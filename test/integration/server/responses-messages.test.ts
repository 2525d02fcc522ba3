// /v1/responses and /v1/messages as their own SDKs use them — the `openai` npm client's responses.create (streamed and
// not) and responses.stream(), the `@anthropic-ai/sdk` client's messages.create, messages.stream() and countTokens —
// against a `gantry serve` process with the tiny generated models: text, instructions/system, items and blocks of a
// tool loop's history, images, JSON output, sampling fields, the typed and named events in their order, and errors in
// each API's shape. Both are served on chat completions: the same prompt gives the same token counts there.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { encodePng, patternImage } from "../../support/images.ts";
import { visionPairPaths } from "../../support/models.ts";
import { createVisionModel, type TestServer } from "../../support/server.ts";
import { startTinyServer } from "../../support/tiny-server.ts";

let srv: TestServer;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  // "babbler" never ends on its own: its answers are exactly the tokens asked for. "tiny" ends now and then.
  ({ srv, openai } = await startTinyServer());
  await createVisionModel(srv.url, "vis", await visionPairPaths());
  // The SDK sends its key as x-api-key, which the server accepts (it needs none).
  anthropic = new Anthropic({ baseURL: srv.url, apiKey: "placeholder", maxRetries: 0 });
});
after(async () => {
  await srv?.stop();
});

const PNG = encodePng(patternImage(64, 48, 3));
const HISTORY = "What is the weather in Paris?";
/** An answer that must be JSON: the grammar makes the model write it and end. */
const verdict = {
  type: "object",
  properties: { ok: { type: "boolean" } },
  required: ["ok"],
  additionalProperties: false,
} as const;

/** The prompt tokens of the same conversation through /v1/chat/completions. */
async function chatPromptTokens(messages: OpenAI.ChatCompletionMessageParam[]): Promise<number> {
  const r = await openai.chat.completions.create({ model: "babbler", messages, max_tokens: 1 });
  return r.usage!.prompt_tokens;
}

/** Anthropic's sampling fields, which this SDK's types no longer list (older SDKs and other clients send them). */
const sampling = (fields: { temperature?: number; top_p?: number; top_k?: number }): object => fields;

/**
 * Event types with each run of deltas as one (a token that ends inside a UTF-8 character comes out with the next).
 */
const runs = (types: string[]): string[] => types.filter((t, i) => !(t.endsWith("delta") && types[i - 1] === t));

async function failure(p: Promise<unknown>): Promise<{ status: number; message: string; error: unknown }> {
  try {
    await p;
  } catch (e) {
    const err = e as { status?: number; message: string; error?: unknown };
    return { status: err.status ?? 0, message: err.message, error: err.error };
  }
  assert.fail("the call succeeded");
}

describe("/v1/responses through the openai client", () => {
  test("instructions and a string input: a response cut at max_output_tokens is incomplete; usage as chat's", async () => {
    const r = await openai.responses.create({
      model: "babbler",
      instructions: "Be brief.",
      input: "Hello!",
      max_output_tokens: 4,
      temperature: 0.5,
      top_p: 0.9,
    });
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, "response");
    assert.equal(r.status, "incomplete");
    assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(r.output.length, 1);
    const [message] = r.output as OpenAI.Responses.ResponseOutputMessage[];
    assert.equal(message!.type, "message");
    assert.equal(message!.role, "assistant");
    assert.ok(r.output_text.length > 0 && r.output_text === (message!.content[0] as { text: string }).text);
    assert.equal(r.usage?.output_tokens, 4);
    assert.equal(r.usage?.total_tokens, r.usage!.input_tokens + 4);
    assert.deepEqual([r.instructions, r.temperature, r.top_p, r.max_output_tokens], ["Be brief.", 0.5, 0.9, 4]);
    assert.equal(
      r.usage?.input_tokens,
      await chatPromptTokens([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello!" },
      ]),
    );
  });

  test("items: messages, a function call and its output (a tool loop's history) render as chat messages do", async () => {
    const r = await openai.responses.create({
      model: "babbler",
      max_output_tokens: 2,
      input: [
        { role: "developer", content: "Answer in French." },
        { role: "user", content: [{ type: "input_text", text: HISTORY }] },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call_output", call_id: "call_1", output: "sunny, 24 C" },
        {
          type: "message",
          id: "msg_1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "It is sunny.", annotations: [] }],
        },
        { role: "user", content: "Thanks!" },
      ],
    });
    assert.equal(r.usage?.output_tokens, 2);
    const call = {
      id: "call_1",
      type: "function" as const,
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    };
    const chat = await chatPromptTokens([
      { role: "developer", content: "Answer in French." },
      { role: "user", content: HISTORY },
      { role: "assistant", content: "", tool_calls: [call] },
      { role: "tool", tool_call_id: "call_1", content: "sunny, 24 C" },
      { role: "assistant", content: "It is sunny." },
      { role: "user", content: "Thanks!" },
    ]);
    assert.equal(r.usage?.input_tokens, chat);
  });

  test("stream: true gives the typed events in order, numbered; the deltas are the text", async () => {
    const stream = await openai.responses.create({
      model: "babbler",
      input: "Hello!",
      max_output_tokens: 3,
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    assert.deepEqual(runs(events.map((e) => e.type)), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.incomplete",
    ]);
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const deltas = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []));
    const done = events.find((e) => e.type === "response.output_text.done");
    assert.equal(done?.text, deltas.join(""));
    const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    assert.equal(last.response.usage?.output_tokens, 3);
    const item = last.response.output[0] as OpenAI.Responses.ResponseOutputMessage;
    assert.equal((item.content[0] as { text: string }).text, deltas.join(""));
  });

  test("responses.stream() with a JSON schema (text.format): snapshots grow, the final response parses and completes", async () => {
    const stream = openai.responses.stream({
      model: "tiny",
      input: "Is the sky blue?",
      max_output_tokens: 64,
      text: { format: { type: "json_schema", name: "verdict", schema: verdict, strict: true } },
    });
    const snapshots: string[] = [];
    stream.on("response.output_text.delta", (e) => snapshots.push(e.snapshot));
    const final = await stream.finalResponse();
    assert.equal(final.status, "completed", "the grammar ended the answer");
    assert.equal(typeof (JSON.parse(final.output_text) as { ok: unknown }).ok, "boolean");
    assert.equal(snapshots.at(-1), final.output_text);
    assert.ok(snapshots.every((s, i) => i === 0 || s.startsWith(snapshots[i - 1]!)));
    assert.deepEqual(final.text?.format, { type: "json_schema", name: "verdict", schema: verdict, strict: true });
  });

  test("an input_image to a vision model", async () => {
    const image = `data:image/png;base64,${PNG.toString("base64")}`;
    const ask = (content: OpenAI.Responses.ResponseInputMessageContentList) =>
      openai.responses.create({ model: "vis", max_output_tokens: 2, input: [{ role: "user", content }] });
    const [withImage, without] = await Promise.all([
      ask([
        { type: "input_text", text: "What is this?" },
        { type: "input_image", image_url: image, detail: "auto" },
      ]),
      ask([{ type: "input_text", text: "What is this?" }]),
    ]);
    assert.ok(withImage.usage!.input_tokens > without.usage!.input_tokens, "the image's tokens are in the prompt");
  });

  test("previous_response_id is a 400 saying the server is stateless; a bad item a 400 naming it", async () => {
    const stateful = await failure(
      openai.responses.create({ model: "babbler", input: "hi", previous_response_id: "resp_123" }),
    );
    assert.equal(stateful.status, 400);
    assert.match(stateful.message, /previous_response_id: not supported \(Gantry does not store responses/);
    const orphan = await failure(
      openai.responses.create({
        model: "babbler",
        input: [{ type: "function_call_output", call_id: "call_9", output: "42" }],
      }),
    );
    assert.equal(orphan.status, 400);
    assert.match(orphan.message, /invalid input\.0\.call_id: no function_call with call_id "call_9"/);
  });
});

describe("/v1/messages through the Anthropic client", () => {
  test("system blocks, max_tokens and sampling fields: the message, stop_reason max_tokens, usage as chat's", async () => {
    const m = await anthropic.messages.create({
      model: "babbler",
      max_tokens: 4,
      system: [{ type: "text", text: "Be brief." }],
      messages: [{ role: "user", content: "Hello!" }],
      ...sampling({ temperature: 0.5, top_p: 0.9, top_k: 40 }),
    });
    assert.match(m.id, /^msg_/);
    assert.deepEqual([m.type, m.role, m.model, m.stop_reason], ["message", "assistant", "babbler", "max_tokens"]);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0]!.type, "text");
    assert.ok((m.content[0] as Anthropic.TextBlock).text.length > 0);
    assert.equal(m.usage.output_tokens, 4);
    assert.equal(
      m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0),
      await chatPromptTokens([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello!" },
      ]),
    );
  });

  test("a greedy answer is the same twice (temperature 0, top_k 1); stop_sequences end it early", async () => {
    const ask = (stop_sequences?: string[]) =>
      anthropic.messages.create({
        model: "babbler",
        max_tokens: 12,
        ...sampling({ temperature: 0, top_k: 1 }),
        messages: [{ role: "user", content: "Count." }],
        ...(stop_sequences ? { stop_sequences } : {}),
      });
    const text = (m: Anthropic.Message) => (m.content[0] as Anthropic.TextBlock).text;
    const [a, b] = [await ask(), await ask()];
    assert.equal(text(a), text(b));
    // Two letters from the answer's second half (the babble also has bytes that are not whole characters).
    const stop = /[a-z]{2}/.exec(text(a).slice(Math.floor(text(a).length / 2)))?.[0] ?? "";
    assert.equal(stop.length, 2, text(a));
    const cut = await ask([stop]);
    assert.equal(text(cut), text(a).slice(0, text(a).indexOf(stop)), "the answer ends before the stop sequence");
    assert.equal(cut.stop_reason, "end_turn");
  });

  test("messages.stream(): the named events in order; the final message is the deltas; countTokens agrees", async () => {
    const params = { model: "babbler", max_tokens: 3, messages: [{ role: "user" as const, content: "Hello!" }] };
    const stream = anthropic.messages.stream(params);
    const events: string[] = [];
    let text = "";
    stream.on("streamEvent", (e) => events.push(e.type));
    stream.on("text", (t) => (text += t));
    const final = await stream.finalMessage();
    assert.deepEqual(runs(events), [
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    assert.equal((final.content[0] as Anthropic.TextBlock).text, text);
    assert.equal(final.stop_reason, "max_tokens");
    assert.equal(final.usage.output_tokens, 3);
    const counted = await anthropic.messages.countTokens({ model: "babbler", messages: params.messages });
    assert.equal(counted.input_tokens, final.usage.input_tokens + (final.usage.cache_read_input_tokens ?? 0));
  });

  test("stream: true on messages.create; a ping after message_start on the wire", async () => {
    const stream = await anthropic.messages.create({
      model: "babbler",
      max_tokens: 2,
      stream: true,
      messages: [{ role: "user", content: "Hello!" }],
    });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    assert.equal(types[0], "message_start");
    assert.equal(types.at(-1), "message_stop");
    const raw = await fetch(`${srv.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "placeholder", "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({
        model: "babbler",
        max_tokens: 1,
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    assert.match(raw.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.match(await raw.text(), /^event: message_start\ndata: .*\n\nevent: ping\ndata: {"type":"ping"}\n\n/);
  });

  test("tool_use and tool_result blocks (a tool loop's history) and an image render as chat messages do", async () => {
    const m = await anthropic.messages.create({
      model: "vis",
      max_tokens: 2,
      messages: [
        { role: "user", content: HISTORY },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me look." },
            { type: "tool_use", id: "toolu_01", name: "get_weather", input: { city: "Paris" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01", content: [{ type: "text", text: "sunny, 24 C" }] },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG.toString("base64") } },
            { type: "text", text: "And this picture?" },
          ],
        },
      ],
    });
    const call = {
      id: "toolu_01",
      type: "function" as const,
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    };
    const chat = await openai.chat.completions.create({
      model: "vis",
      max_tokens: 1,
      messages: [
        { role: "user", content: HISTORY },
        { role: "assistant", content: "Let me look.", tool_calls: [call] },
        { role: "tool", tool_call_id: "toolu_01", content: "sunny, 24 C" },
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } },
            { type: "text", text: "And this picture?" },
          ],
        },
      ],
    });
    assert.equal(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0), chat.usage?.prompt_tokens);
  });

  test("errors come in Anthropic's shape with its types: unknown model, a tool_result for no call", async () => {
    const missing = await failure(
      anthropic.messages.create({ model: "no-such-model", max_tokens: 2, messages: [{ role: "user", content: "hi" }] }),
    );
    assert.equal(missing.status, 404);
    assert.deepEqual((missing.error as { type: string; error: { type: string } }).type, "error");
    assert.equal((missing.error as { error: { type: string } }).error.type, "not_found_error");
    const orphan = await failure(
      anthropic.messages.create({
        model: "babbler",
        max_tokens: 2,
        messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", content: "42" }] }],
      }),
    );
    assert.equal(orphan.status, 400);
    assert.equal((orphan.error as { error: { type: string } }).error.type, "invalid_request_error");
    assert.match(
      (orphan.error as { error: { message: string } }).error.message,
      /messages\.0\.content\.0\.tool_use_id: unexpected tool_use_id "toolu_9"/,
    );
  });
});

test("/metrics counts both APIs by route", async () => {
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  for (const route of ["/v1/responses", "/v1/messages", "/v1/messages/count_tokens"])
    assert.match(
      metrics,
      new RegExp(`^gantry_http_requests_total\\{route="${route}",method="POST",status="200"\\} [1-9]`, "m"),
    );
});
