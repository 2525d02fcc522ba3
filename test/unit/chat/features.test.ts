import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { templateFeatures } from "../../../server/chat/features.ts";
import { renderChat } from "../../../server/chat/render.ts";
import { CHATML_TEMPLATE } from "../../support/gguf/llama.ts";

const fixture = (name: string) =>
  fs.readFileSync(path.join(import.meta.dirname, "../../fixtures/chat-templates", name), "utf8");
const jinja = (name: string) => ({ kind: "jinja" as const, text: fixture(name) });

test("the call format of each family is read off its real template", () => {
  const hermes = { start: "<tool_call>", alsoStart: [], end: "</tool_call>", array: false, nameKey: "name" };
  for (const name of ["qwen2.5-instruct.jinja", "qwen3.jinja", "hermes3-tool-use.jinja"])
    assert.deepEqual(templateFeatures(jinja(name)).toolCalls, { ...hermes, argumentsKey: "arguments", idKey: false });
  assert.deepEqual(templateFeatures(jinja("llama3.1-instruct.jinja")).toolCalls, {
    ...hermes,
    start: "",
    end: "",
    alsoStart: ["<|python_tag|>"],
    argumentsKey: "parameters",
    idKey: false,
  });
  assert.deepEqual(templateFeatures(jinja("mistral-nemo-instruct.jinja")).toolCalls, {
    ...hermes,
    start: "[TOOL_CALLS]",
    end: "",
    array: true,
    argumentsKey: "arguments",
    idKey: true,
  });
  const go = /TEMPLATE """([\s\S]*?)"""/.exec(
    fs.readFileSync(path.join(import.meta.dirname, "../../fixtures/modelfiles/tools.Modelfile"), "utf8"),
  )![1]!;
  assert.equal(templateFeatures({ kind: "go", text: go }).toolCalls?.start, "<tool_call>");
});

test("thinking where the template has a thinking section; tools only where it renders them", () => {
  assert.deepEqual(templateFeatures(jinja("qwen3.jinja")).thinking, {
    open: "<think>",
    close: "</think>",
    switchable: true,
  });
  assert.equal(templateFeatures(jinja("qwen2.5-instruct.jinja")).thinking, undefined);
  const chatml = templateFeatures({ kind: "jinja", text: CHATML_TEMPLATE });
  assert.deepEqual([chatml.tools, chatml.thinking, chatml.turnEnd], [false, undefined, "<|im_end|>"]);
});

test("Qwen3 renders tools, a call, its result and enable_thinking as Hugging Face does", () => {
  const text = renderChat(jinja("qwen3.jinja"), {
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "w", arguments: { city: "Paris" } }] },
      { role: "tool", content: "21", toolCallId: "call_1", toolName: "w" },
    ],
    tools: [{ name: "w", parameters: { type: "object", properties: {} } }],
    think: false,
    addGenerationPrompt: true,
  });
  assert.match(text, /<tools>\n\{"type": "function", "function": \{"name": "w"/);
  assert.match(text, /<tool_call>\n\{"name": "w", "arguments": \{"city": "Paris"\}\}\n<\/tool_call>/);
  assert.match(text, /<tool_response>\n21\n<\/tool_response>/);
  assert.ok(text.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
});

test("Mistral's template gets 9-character call ids, the same for a call and its result", () => {
  const text = renderChat(jinja("mistral-nemo-instruct.jinja"), {
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_abc", name: "w", arguments: {} }] },
      { role: "tool", content: "21", toolCallId: "call_abc" },
    ],
    addGenerationPrompt: true,
  });
  const ids = [...text.matchAll(/"(?:id|call_id)": "([^"]+)"/g)].map((m) => m[1]);
  assert.equal(ids.length, 2);
  assert.match(ids[0]!, /^[a-zA-Z0-9]{9}$/);
  assert.equal(ids[0], ids[1]);
});
