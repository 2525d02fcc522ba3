// Tool calling and thinking through the real `openai` and `ollama` clients against `gantry serve`, on tiny random
// models that carry the real chat templates of Qwen2.5, Qwen3, Llama 3.1 and Mistral Nemo: with tool_choice
// "required" (or a named function) the grammar makes even random weights write a call whose arguments parse and match
// the tool's schema, in each family's own format; a model that writes <tool_call> by itself calls through the lazy
// grammar; a full loop (call, tool result, answer) runs streamed and not.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { familyModelPath, tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;
let openai: OpenAI;
let ollama: Ollama;

const FAMILIES = ["qwen2.5", "qwen3", "llama3.1", "mistral"] as const;

before(async () => {
  srv = await startTestServer({ env: {} });
  for (const family of FAMILIES) await createModel(srv.url, family, await familyModelPath(family));
  // Writes <tool_call> by itself (and ends its turn now and then): calls without being told to.
  await createModel(srv.url, "caller", await familyModelPath("qwen2.5", { "<tool_call>": 2, "<|im_end|>": 1 }));
  await createModel(srv.url, "chatml", await tinyModelPath());
  await createModel(srv.url, "reasoner", await familyModelPath("qwen3"), { template: OPENS_THINKING });
  await createModel(srv.url, "leveled", await familyModelPath("qwen3"), { template: LEVELED });
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
  ollama = new Ollama({ host: srv.url });
});
after(async () => {
  await srv?.stop();
});

const weather: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { enum: ["Paris", "Oslo"] }, days: { type: "integer" }, metric: { type: "boolean" } },
      required: ["city", "days", "metric"],
    },
  },
};
const clock: ChatCompletionTool = {
  type: "function",
  function: { name: "get_time", parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET"] } } } },
};
/**
 * A Modelfile TEMPLATE that opens the thinking section itself when thinking is on (as DeepSeek-R1's and QwQ's
 * templates do): the tiny model never closes it, so all it writes is thinking.
 */
const OPENS_THINKING = `{{- range .Messages }}<|im_start|>{{ .Role }}
{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if .Think }}<think>
{{ end }}`;

/** OPENS_THINKING with the level written into the system turn, as gpt-oss's "Reasoning: high" (Go's .ThinkLevel). */
const LEVELED = `<|im_start|>system
Reasoning: {{ if .ThinkLevel }}{{ .ThinkLevel }}{{ else }}default{{ end }}<|im_end|>
${OPENS_THINKING}`;

const ask: ChatCompletionMessageParam[] = [{ role: "user", content: "What is the weather in Paris?" }];
/** Enough tokens for a whole call of these tools even one character a token. */
const ROOM = 300;

/** Arguments that match get_weather's schema. */
function assertWeatherArguments(json: string): void {
  const args = JSON.parse(json) as Record<string, unknown>;
  assert.ok(["Paris", "Oslo"].includes(args.city as string), json);
  assert.ok(Number.isInteger(args.days), json);
  assert.equal(typeof args.metric, "boolean", json);
}

describe("capabilities", () => {
  test("tools where the template renders them, thinking where it has a thinking section", async () => {
    const caps = async (model: string) => (await ollama.show({ model })).capabilities;
    for (const family of ["qwen2.5", "llama3.1", "mistral"])
      assert.deepEqual(await caps(family), ["completion", "tools"]);
    assert.deepEqual(await caps("qwen3"), ["completion", "tools", "thinking"]);
    assert.deepEqual(await caps("chatml"), ["completion"]);
    // parameters is always there, empty when the model has none (clients read it unconditionally).
    assert.equal((await ollama.show({ model: "qwen2.5" })).parameters, "");
    const listed = (await openai.models.list()).data as Array<{ id: string; capabilities?: string[] }>;
    assert.deepEqual(listed.find((m) => m.id === "qwen3:latest")?.capabilities, ["completion", "tools", "thinking"]);
  });
});

describe("tool_choice required: a valid call in each family's format", () => {
  for (const family of FAMILIES) {
    test(`${family}: non-streamed and streamed through the openai SDK`, async () => {
      const body = {
        model: family,
        messages: ask,
        tools: [weather, clock],
        tool_choice: "required" as const,
        parallel_tool_calls: false,
        max_tokens: ROOM,
      };
      const r = await openai.chat.completions.create(body);
      const choice = r.choices[0]!;
      assert.equal(choice.finish_reason, "tool_calls");
      assert.equal(choice.message.tool_calls?.length, 1);
      const call = choice.message.tool_calls![0]!;
      assert.ok(call.type === "function" && call.id.startsWith("call_"));
      assert.ok(["get_weather", "get_time"].includes(call.function.name));
      if (call.function.name === "get_weather") assertWeatherArguments(call.function.arguments);

      // The SDK's stream helper assembles the deltas (index, id, argument fragments) into the same message.
      const stream = openai.chat.completions.stream(body);
      const finishes: Array<string | null> = [];
      stream.on("chunk", (c) => finishes.push(c.choices[0]?.finish_reason ?? null));
      const final = await stream.finalChatCompletion();
      const streamed = final.choices[0]!.message.tool_calls!;
      assert.equal(streamed.length, 1);
      assert.equal(finishes.at(-1), "tool_calls");
      assert.deepEqual(finishes.slice(0, -1).filter(Boolean), []);
      assert.ok(streamed[0]!.type === "function");
      JSON.parse(streamed[0]!.function.arguments);
    });
  }

  test("a named function is the one called", async () => {
    const r = await openai.chat.completions.create({
      model: "qwen2.5",
      messages: ask,
      tools: [weather, clock],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      max_tokens: ROOM,
    });
    const call = r.choices[0]!.message.tool_calls![0]!;
    assert.ok(call.type === "function" && call.function.name === "get_weather");
    assertWeatherArguments(call.function.arguments);
  });
});

describe("a full loop: call, tool result, answer", () => {
  for (const stream of [false, true]) {
    test(`openai SDK, ${stream ? "streamed" : "not streamed"}`, async () => {
      const first = await openai.chat.completions
        .stream({ model: "mistral", messages: ask, tools: [weather], tool_choice: "required", max_tokens: ROOM })
        .finalChatCompletion();
      const assistant = first.choices[0]!.message;
      const call = assistant.tool_calls![0]!;
      assert.ok(call.type === "function");
      const messages: ChatCompletionMessageParam[] = [
        ...ask,
        { role: "assistant", content: assistant.content ?? null, tool_calls: assistant.tool_calls! },
        { role: "tool", tool_call_id: call.id, content: '{"temperature": 21}' },
      ];
      const body = { model: "mistral", messages, tools: [weather], max_tokens: 8 };
      const answer = stream
        ? await openai.chat.completions.stream(body).finalChatCompletion()
        : await openai.chat.completions.create(body);
      assert.ok(answer.choices[0]!.message.content!.length > 0);
      assert.equal(answer.choices[0]!.message.tool_calls?.length ?? 0, 0);
      assert.notEqual(answer.choices[0]!.finish_reason, "tool_calls");
    });

    test(`ollama client, a model that calls by itself (lazy grammar), ${stream ? "streamed" : "not streamed"}`, async () => {
      const tools = [weather] as Parameters<Ollama["chat"]>[0]["tools"];
      const messages = [{ role: "user", content: "What is the weather in Paris?" }];
      let calls;
      if (stream) {
        calls = [];
        for await (const part of await ollama.chat({
          model: "caller",
          messages,
          tools,
          stream: true,
          options: { num_predict: ROOM, seed: 7 },
        }))
          calls.push(...(part.message.tool_calls ?? []));
      } else
        calls = (await ollama.chat({ model: "caller", messages, tools, options: { num_predict: ROOM, seed: 7 } }))
          .message.tool_calls;
      assert.ok(calls && calls.length > 0, "no tool call");
      for (const c of calls) {
        assert.equal(c.function.name, "get_weather");
        assert.equal(typeof c.function.arguments, "object");
        assertWeatherArguments(JSON.stringify(c.function.arguments));
      }
      const answer = await ollama.chat({
        model: "qwen2.5",
        messages: [
          ...messages,
          { role: "assistant", content: "", tool_calls: [calls[0]!] },
          { role: "tool", content: '{"temperature": 21}', tool_name: "get_weather" } as never,
        ],
        tools,
        options: { num_predict: 8 },
      });
      assert.ok(answer.message.content.length > 0);
    });
  }
});

test("a role other than system, user, assistant and tool goes to the template (Llama 3.1's ipython)", async () => {
  const messages = [{ role: "user", content: "Run it." }];
  const options = { num_predict: 2 };
  const before = await ollama.chat({ model: "llama3.1", messages, options });
  const r = await ollama.chat({
    model: "llama3.1",
    messages: [...messages, { role: "ipython", content: "42" }],
    options,
  });
  assert.ok(r.prompt_eval_count > before.prompt_eval_count);
});

describe("thinking", () => {
  const user = [{ role: "user" as const, content: "Why is the sky blue?" }];
  const options = { num_predict: 6 };

  test("think: false renders Qwen3's empty thinking section (enable_thinking) and nothing is thinking", async () => {
    const plain = await ollama.chat({ model: "qwen3", messages: user, options });
    const off = await ollama.chat({ model: "qwen3", messages: user, options, think: false });
    // <think>\n\n</think>\n\n: the template's own switch.
    assert.ok(off.prompt_eval_count > plain.prompt_eval_count);
    assert.equal(off.message.thinking, undefined);
    assert.ok(off.message.content.length > 0);
  });

  test("/api/chat and /api/generate: thinking apart from the answer, streamed apart", async () => {
    const r = await ollama.chat({ model: "reasoner", messages: user, options, think: true });
    assert.ok(r.message.thinking!.length > 0);
    assert.equal(r.message.content, "");
    let thinking = "";
    for await (const part of await ollama.chat({
      model: "reasoner",
      messages: user,
      options,
      think: true,
      stream: true,
    })) {
      thinking += part.message.thinking ?? "";
      assert.equal(part.message.content, "");
    }
    assert.ok(thinking.length > 0);
    const g = await ollama.generate({ model: "reasoner", prompt: "Why?", options, think: "high" });
    assert.ok(g.thinking!.length > 0);
    assert.equal(g.response, "");
    const off = await ollama.chat({ model: "reasoner", messages: user, options, think: false });
    assert.ok(off.message.content.length > 0);
    assert.equal(off.message.thinking, undefined);
  });

  test("think levels reach the template (.ThinkLevel) from /api and from /v1's reasoning_effort", async () => {
    // The level's word is in the prompt: "default" and "medium" are each one token more than "low", "high" and "max".
    const counts = async (think: boolean | "low" | "medium" | "high" | "max") =>
      // The npm client types no "max" yet; Ollama takes it.
      (await ollama.chat({ model: "leveled", messages: user, options, think: think as boolean })).prompt_eval_count;
    const [dflt, low, max] = [await counts(true), await counts("low"), await counts("max")];
    assert.notEqual(dflt, low, "the level went into the prompt");
    assert.ok(max > 0);
    const v1 = async (reasoning_effort: "low" | "xhigh") =>
      (await openai.chat.completions.create({ model: "leveled", messages: user, max_tokens: 2, reasoning_effort }))
        .usage!.prompt_tokens;
    assert.equal(await v1("low"), low);
    assert.equal(await v1("xhigh"), max, "OpenAI's xhigh is Ollama's max");
    const bad = await fetch(`${srv.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({ model: "leveled", messages: user, think: "extreme" }),
    });
    assert.equal(bad.status, 400);
    assert.match(
      ((await bad.json()) as { error: string }).error,
      /must be "high", "medium", "low", "max", true, or false/,
    );
  });

  test("/v1/chat/completions: reasoning_content, never mixed into content, streamed as its own deltas", async () => {
    const body = { model: "reasoner", messages: user, max_tokens: 6, reasoning_effort: "high" as const };
    const r = await openai.chat.completions.create(body);
    const message = r.choices[0]!.message as { content: string | null; reasoning_content?: string };
    assert.ok(message.reasoning_content!.length > 0);
    assert.equal(message.content, "");
    let reasoning = "";
    for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? "";
      assert.ok(!delta?.content);
    }
    assert.ok(reasoning.length > 0);
    const off = await openai.chat.completions.create({ ...body, reasoning_effort: "none" });
    assert.equal((off.choices[0]!.message as { reasoning_content?: string }).reasoning_content, undefined);
  });
});

describe("bad tool requests: 400 naming the field, in each API's shape", () => {
  const post = (path: string, body: unknown) =>
    fetch(`${srv.url}${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { error: string | { message: string; param?: string | null } },
    }));

  test("tools sent to a model whose template cannot render them", async () => {
    const v1 = await post("/v1/chat/completions", { model: "chatml", messages: ask, tools: [weather] });
    assert.equal(v1.status, 400);
    assert.deepEqual([typeof v1.body.error === "object" && v1.body.error.param], ["tools"]);
    const api = await post("/api/chat", { model: "chatml", messages: ask, tools: [weather], stream: false });
    assert.equal(api.status, 400);
    assert.match(api.body.error as string, /does not support tools/);
  });
});
