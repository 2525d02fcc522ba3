// A whole tool loop (the model calls a tool → the caller sends its result → the model answers) through /v1/responses
// and /v1/messages with the `openai` and `@anthropic-ai/sdk` clients, streamed and not, against `gantry serve`, and
// once more through the gateway of `gantry run` (the same pipeline as the cluster's) with a private app's key, where
// every request is metered. The model is the tiny random one with Qwen 2.5's real chat template and tool tokens
// (test/support/gguf/families.ts): with a required tool choice the grammar makes even random weights write a valid
// call. Thinking: a Modelfile TEMPLATE that opens a <think> section when asked (as DeepSeek-R1's does), and the
// reasoning comes back as Responses' reasoning items and Anthropic's thinking blocks, apart from the answer.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { silentLogger } from "../../../server/common/logger.ts";
import { startLocalGateway, type LocalGateway } from "../../../server/gateway/local.ts";
import { familyModelPath, tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

/** ChatML whose prompt opens the thinking section when thinking is on, as an Ollama Modelfile TEMPLATE. */
const THINKING_TEMPLATE = `{{- range .Messages }}<|im_start|>{{ .Role }}
{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if .Think }}<think>
{{ end }}`;

let srv: TestServer;
let gateway: LocalGateway;

before(async () => {
  srv = await startTestServer();
  await createModel(srv.url, "agent", await familyModelPath("qwen2.5"));
  await createModel(srv.url, "thinker", await tinyModelPath({ controlLogit: -8 }), { template: THINKING_TEMPLATE });
  gateway = await startLocalGateway({
    org: "local",
    app: "agent",
    auth: "private",
    host: "127.0.0.1",
    port: 0,
    logger: silentLogger,
  });
  gateway.serve(srv.url, "agent", "agent:latest");
});
after(async () => {
  await gateway?.close(0);
  await srv?.stop();
});

const QUESTION = "What is the weather in Paris?";
const RESULT = "sunny, 24 C";
const parameters = {
  type: "object",
  // Cities by name: random weights would write a free string until the token limit.
  properties: { city: { enum: ["Paris", "Berlin", "Tokyo"] } },
  required: ["city"],
  additionalProperties: false,
};

/** A call's arguments, checked against the tool's schema. */
function cityOf(args: unknown): string {
  const a = (typeof args === "string" ? JSON.parse(args) : args) as Record<string, unknown>;
  assert.deepEqual(Object.keys(a), ["city"], JSON.stringify(a));
  assert.ok(["Paris", "Berlin", "Tokyo"].includes(a.city as string), String(a.city));
  return a.city as string;
}

const responsesTools: OpenAI.Responses.Tool[] = [
  { type: "function", name: "get_weather", description: "The weather in a city", parameters, strict: true },
];

/** The loop through /v1/responses; returns the token counts of its two answers. */
async function responsesLoop(openai: OpenAI, stream: boolean): Promise<number[]> {
  const ask = async (input: OpenAI.Responses.ResponseInput, tool_choice: "required" | "auto", max: number) => {
    // One call at a time (random weights would make as many as the tokens allow).
    const params = {
      model: "agent",
      input,
      tools: responsesTools,
      tool_choice,
      parallel_tool_calls: false,
      max_output_tokens: max,
    };
    if (!stream) return openai.responses.create(params);
    const s = openai.responses.stream(params);
    const fragments: string[] = [];
    s.on("response.function_call_arguments.delta", (e) => fragments.push(e.delta));
    const final = await s.finalResponse();
    const calls = final.output.filter((o) => o.type === "function_call");
    if (calls.length) assert.equal(fragments.join(""), calls.map((c) => c.arguments).join(""), "streamed arguments");
    return final;
  };
  const first = await ask([{ role: "user", content: QUESTION }], "required", 160);
  assert.equal(first.status, "completed");
  const output = first.output as OpenAI.Responses.ResponseOutputItem[];
  const call = output.find((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === "function_call");

  assert.ok(call, JSON.stringify(first.output));
  assert.equal(call.name, "get_weather");
  assert.ok(call.call_id.length > 0);
  cityOf(call.arguments);
  // The Agents SDK's way: the output items go back as they came, followed by the tool's result.
  const second = await ask(
    [
      { role: "user", content: QUESTION },
      ...(output as OpenAI.Responses.ResponseInputItem[]),
      { type: "function_call_output", call_id: call.call_id, output: RESULT },
    ],
    "auto",
    4,
  );
  assert.ok(second.usage!.input_tokens > first.usage!.input_tokens, "the call and its result are in the prompt");
  assert.ok(second.output.length > 0);
  return [first.usage!, second.usage!].flatMap((u) => [u.input_tokens, u.output_tokens]);
}

const anthropicTools: Anthropic.Tool[] = [
  { name: "get_weather", description: "The weather in a city", input_schema: parameters as Anthropic.Tool.InputSchema },
];

/** The loop through /v1/messages; returns the token counts of its two answers. */
async function messagesLoop(claude: Anthropic, stream: boolean): Promise<number[]> {
  const ask = async (messages: Anthropic.MessageParam[], tool_choice: Anthropic.ToolChoice, max: number) => {
    const params = { model: "agent", max_tokens: max, messages, tools: anthropicTools, tool_choice };
    if (!stream) return claude.messages.create(params);
    const s = claude.messages.stream(params);
    let json = "";
    s.on("inputJson", (partial) => (json += partial));
    const final = await s.finalMessage();
    const uses = final.content.filter((b) => b.type === "tool_use");
    if (uses.length) assert.deepEqual(JSON.parse(json), uses[0]!.input, "streamed input_json_delta");
    return final;
  };
  const question: Anthropic.MessageParam = { role: "user", content: QUESTION };
  const first = await ask([question], { type: "any", disable_parallel_tool_use: true }, 160);
  assert.equal(first.stop_reason, "tool_use");
  const use = first.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(first.content));
  assert.equal(use.name, "get_weather");
  cityOf(use.input);
  const second = await ask(
    [
      question,
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: RESULT }] },
    ],
    { type: "auto" },
    4,
  );
  // The whole prompt: Anthropic's input_tokens leaves out what was read from the cache.
  const prompt = (u: Anthropic.Usage): number => u.input_tokens + (u.cache_read_input_tokens ?? 0);
  assert.ok(prompt(second.usage) > prompt(first.usage), "the call and its result are in the prompt");
  assert.ok(second.content.length > 0);
  return [first.usage, second.usage].flatMap((u) => [prompt(u), u.output_tokens]);
}

describe("a tool loop against gantry serve", () => {
  const openai = () => new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
  const claude = () => new Anthropic({ baseURL: srv.url, apiKey: "unused", maxRetries: 0 });
  test("/v1/responses, not streamed", async () => void (await responsesLoop(openai(), false)));
  test("/v1/responses, responses.stream()", async () => void (await responsesLoop(openai(), true)));
  test("/v1/messages, not streamed", async () => void (await messagesLoop(claude(), false)));
  test("/v1/messages, messages.stream()", async () => void (await messagesLoop(claude(), true)));
});

test("through gantry run's gateway with the app's key (Bearer for openai, x-api-key for Anthropic), metered", async () => {
  const key = gateway.key!;
  const url = `${gateway.base}/local/agent`;
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key });
  const claude = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
  // One loop per API, one of them streamed (each way is tested against the server above).
  const counts = [...(await responsesLoop(openai, false)), ...(await messagesLoop(claude, true))];
  const refused = await new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 }).messages
    .create({ model: "agent", max_tokens: 2, messages: [{ role: "user", content: QUESTION }] })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(refused instanceof Anthropic.AuthenticationError, String(refused));
  // The usage of the app, as its org's admin reads it: every token of the four answers.
  const got = await fetch(`${gateway.base}/_gantry/v1/orgs/local/usage`, { headers: { "x-api-key": key } });
  assert.equal(got.status, 200);
  const rows = ((await got.json()) as { usage: Array<{ app: string; promptTokens: number; completionTokens: number }> })
    .usage;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const mine = rows.filter((r) => r.app === "agent");
  assert.deepEqual(
    [sum(mine.map((r) => r.promptTokens)), sum(mine.map((r) => r.completionTokens))],
    [sum(counts.filter((_, i) => i % 2 === 0)), sum(counts.filter((_, i) => i % 2 === 1))],
  );
});

test("thinking: reasoning comes back apart from the answer, as reasoning items and thinking blocks", async () => {
  const openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
  const r = await openai.responses.create({
    model: "thinker",
    input: QUESTION,
    reasoning: { effort: "low" },
    max_output_tokens: 6,
  });
  const reasoning = r.output.find((o) => o.type === "reasoning");
  assert.ok(reasoning?.content?.[0]?.text, JSON.stringify(r.output));
  assert.equal(r.output_text, "", "the thinking is not in the answer");
  const claude = new Anthropic({ baseURL: srv.url, apiKey: "unused", maxRetries: 0 });
  const s = claude.messages.stream({
    model: "thinker",
    max_tokens: 6,
    thinking: { type: "enabled", budget_tokens: 1024 },
    messages: [{ role: "user", content: QUESTION }],
  });
  let thinking = "";
  s.on("thinking", (delta) => (thinking += delta));
  const m = await s.finalMessage();
  assert.equal(m.content[0]?.type, "thinking");
  assert.equal((m.content[0] as Anthropic.ThinkingBlock).thinking, thinking);
  assert.ok(thinking.length > 0);
  assert.ok(!m.content.some((b) => b.type === "text" && b.text.length > 0), "no text: all six tokens were thinking");
});
