// An agent framework people use, unchanged, against `gantry serve`: the Vercel AI SDK's generateText with a tool and a
// two-step loop (isStepCount(2)) through its OpenAI-compatible provider. The model writes <tool_call> by itself (a
// tiny Qwen2.5-family model that favors it), the SDK runs the tool and sends its result back for the second step.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount, jsonSchema, tool } from "ai";
import { familyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;

before(async () => {
  srv = await startTestServer({ env: {} });
  await createModel(srv.url, "caller", await familyModelPath("qwen2.5", { "<tool_call>": 2, "<|im_end|>": 1 }));
});
after(async () => {
  await srv?.stop();
});

test("Vercel AI SDK: generateText runs a tool and goes on with its result (two steps)", async () => {
  const gantry = createOpenAICompatible({ name: "gantry", baseURL: `${srv.url}/v1` });
  const ran: unknown[] = [];
  const result = await generateText({
    model: gantry("caller"),
    prompt: "What is the weather in Paris?",
    maxOutputTokens: 300,
    tools: {
      get_weather: tool({
        description: "The weather in a city",
        inputSchema: jsonSchema<{ city: "Paris" | "Oslo"; days: number }>({
          type: "object",
          properties: { city: { enum: ["Paris", "Oslo"] }, days: { type: "integer" } },
          required: ["city", "days"],
        }),
        execute: async (input) => {
          ran.push(input);
          return { temperature: 21 };
        },
      }),
    },
    stopWhen: isStepCount(2),
    // One call a step (the random model would go on calling until the token limit); passed through to the request.
    providerOptions: { gantry: { parallel_tool_calls: false } },
  });
  assert.equal(result.steps.length, 2);
  const [first, second] = result.steps;
  assert.ok(first!.toolCalls.length > 0, "the first step called no tool");
  assert.equal(first!.finishReason, "tool-calls");
  assert.ok(ran.length > 0);
  for (const input of ran as Array<{ city: string; days: number }>) {
    assert.ok(["Paris", "Oslo"].includes(input.city));
    assert.ok(Number.isInteger(input.days));
  }
  // The tool's result went back to the model for the second step, which answered.
  assert.deepEqual(
    first!.toolResults.map((r) => r.output),
    first!.toolCalls.map(() => ({ temperature: 21 })),
  );
  assert.ok(result.response.messages.some((m) => m.role === "tool"));
  assert.ok(["stop", "tool-calls", "length"].includes(second!.finishReason));
});
