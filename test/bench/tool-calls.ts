// The tool-call row of the serving benchmark: on one model through `gantry serve`'s /v1/chat/completions, plain
// generation (the same request with tool_choice "auto", which the random weights answer without a call) against
// generation under the tool-call grammar (tool_choice "required": constrained from the first
// token), interleaved over rounds: generated tokens over the request's wall time (each side repeats its own prompt,
// which stays in the KV cache, so that is decode time; a grammar call streams nothing until the call's name is
// written, so the first chunk cannot start the clock), and the time to a complete tool call (a tool whose arguments
// end: an enum, an integer, a boolean), wall clock from the request to the response.
import fs from "node:fs";
import path from "node:path";
import { inTurn, settle } from "./settle.ts";
import { postStreamingLines } from "./stream-client.ts";
import { median } from "./table.ts";
import { createModel, REPO, startTestServer } from "../support/server.ts";

export interface ToolCallRow {
  model: string;
  plainTps: number;
  grammarTps: number;
  /** Median over rounds of grammar ÷ plain measured in the same round. */
  ratio: number;
  /** Time to a complete call of the bounded tool, ms. */
  callMs: number;
  callTokens: number;
}

/** A tool whose string argument never ends with random weights: every token generated is under the grammar. */
const longTool = {
  type: "function",
  function: { name: "write", parameters: { type: "object", properties: { text: { type: "string" } } } },
};
const boundedTool = {
  type: "function",
  function: {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { enum: ["Paris", "Oslo"] }, days: { type: "integer" }, metric: { type: "boolean" } },
    },
  },
};

/** Streams one chat completion: generated tokens over its wall time, the time, the tokens. */
async function completion(url: string, body: object): Promise<{ tps: number; ms: number; tokens: number }> {
  const t0 = performance.now();
  let tokens = 0;
  await postStreamingLines(
    `${url}/v1/chat/completions`,
    { ...body, stream: true, stream_options: { include_usage: true } },
    (line) => {
      if (!line.startsWith("data: ") || line === "data: [DONE]") return;
      const chunk = JSON.parse(line.slice(6)) as { usage?: { completion_tokens: number } };
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    },
  );
  const ms = performance.now() - t0;
  return { tps: tokens / (ms / 1000), ms, tokens };
}

export async function benchToolCalls(
  model: { label: string; path: string },
  opts: { maxTokens?: number; rounds?: number } = {},
): Promise<ToolCallRow> {
  const maxTokens = opts.maxTokens ?? 64;
  const rounds = opts.rounds ?? 5;
  const srv = await startTestServer({ env: { GANTRY_KEEP_ALIVE: "-1", GANTRY_LOG_LEVEL: "warn" } });
  try {
    // The Go template of Ollama's Qwen2.5 (tools as JSON in the system message, calls in <tool_call>).
    const modelfile = fs.readFileSync(path.join(REPO, "test/fixtures/modelfiles/tools.Modelfile"), "utf8");
    const template = /TEMPLATE """([\s\S]*?)"""/.exec(modelfile)![1]!;
    await createModel(srv.url, model.label, model.path, { template });
    const messages = [{ role: "user", content: "Tell me a long story about the sea" }];
    const plainBody = { model: model.label, messages, max_tokens: maxTokens, seed: 1 };
    // Both sides send the tool, so both prompts render it (the same prompt, the same context length): with "auto" the
    // random weights write no call and no grammar applies; with "required" every token is under the grammar.
    const autoBody = { ...plainBody, tools: [longTool], tool_choice: "auto" };
    const grammarBody = { ...plainBody, tools: [longTool], tool_choice: "required" };
    // Warm: the model, and each side's prompt in the KV cache.
    await completion(srv.url, autoBody);
    await completion(srv.url, grammarBody);
    const plain: number[] = [],
      grammar: number[] = [],
      ratios: number[] = [],
      call: number[] = [],
      callTokens: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const runPlain = async () => {
        await settle();
        plain.push((await completion(srv.url, autoBody)).tps);
      };
      const runGrammar = async () => {
        await settle();
        grammar.push((await completion(srv.url, grammarBody)).tps);
      };
      await inTurn(r, runPlain, runGrammar);
      ratios.push(grammar.at(-1)! / plain.at(-1)!);
      await settle();
      const c = await completion(srv.url, {
        ...plainBody,
        max_tokens: 200,
        tools: [boundedTool],
        tool_choice: "required",
        parallel_tool_calls: false,
      });
      call.push(c.ms);
      callTokens.push(c.tokens);
      process.stderr.write(
        `tool calls ${model.label} round ${r + 1}: plain ${plain.at(-1)!.toFixed(1)} tok/s, grammar ` +
          `${grammar.at(-1)!.toFixed(1)} tok/s, complete call ${c.ms.toFixed(0)} ms (${c.tokens} tokens)\n`,
      );
    }
    return {
      model: model.label,
      plainTps: median(plain),
      grammarTps: median(grammar),
      ratio: median(ratios),
      callMs: median(call),
      callTokens: median(callTokens),
    };
  } finally {
    await srv.stop();
  }
}
