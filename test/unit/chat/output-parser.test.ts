import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ToolCallFormat } from "../../../server/chat/features.ts";
import { OutputParser, type ParsedEvent } from "../../../server/chat/output-parser.ts";

const hermes: ToolCallFormat = {
  start: "<tool_call>",
  alsoStart: [],
  end: "</tool_call>",
  array: false,
  nameKey: "name",
  argumentsKey: "arguments",
  idKey: false,
};
const llama: ToolCallFormat = {
  ...hermes,
  start: "",
  end: "",
  alsoStart: ["<|python_tag|>"],
  argumentsKey: "parameters",
};
const mistral: ToolCallFormat = { ...hermes, start: "[TOOL_CALLS]", end: "", array: true, idKey: true };

/** Feeds `text` in pieces of `size` characters (every split point a streamed output may have). */
function parse(p: OutputParser, text: string, size: number): ParsedEvent[] {
  const out: ParsedEvent[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...p.push(text.slice(i, i + size)));
  return [...out, ...p.flush()];
}

/** The events with consecutive pieces of the same kind joined. */
function summary(events: ParsedEvent[]) {
  const content = events.flatMap((e) => (e.kind === "content" ? [e.text] : [])).join("");
  const thinking = events.flatMap((e) => (e.kind === "thinking" ? [e.text] : [])).join("");
  const calls = events.flatMap((e) => (e.kind === "call" ? [{ ...e.call, text: e.argumentsText }] : []));
  const streamed = new Map<number, string>();
  for (const e of events)
    if (e.kind === "call-arguments") streamed.set(e.index, (streamed.get(e.index) ?? "") + e.text);
  const triggers = events.filter((e) => e.kind === "trigger").length;
  return { content, thinking, calls, streamed: [...streamed.values()], triggers };
}

describe("output parser", () => {
  for (const size of [1, 3, 7, 1000]) {
    test(`Hermes/Qwen calls with content before them, pieces of ${size}`, () => {
      const text =
        'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
      const s = summary(parse(new OutputParser({ tools: hermes }), text, size));
      assert.equal(s.content, "Let me look.\n");
      assert.deepEqual(
        s.calls.map((c) => [c.name, c.arguments, c.text]),
        [
          ["get_weather", { city: "Paris", days: [1, 2] }, '{"city": "Paris", "days": [1, 2]}'],
          ["get_time", {}, "{}"],
        ],
      );
      assert.deepEqual(s.streamed, ['{"city": "Paris", "days": [1, 2]}', "{}"]);
      assert.equal(s.triggers, 2);
    });

    test(`Qwen3 thinking, then an answer, pieces of ${size}`, () => {
      const p = new OutputParser({ thinking: { open: "<think>", close: "</think>" }, tools: hermes });
      const s = summary(parse(p, "<think>\nThe user greets me.\n</think>\n\nHello there!", size));
      assert.equal(s.thinking, "The user greets me.");
      assert.equal(s.content, "Hello there!");
      assert.equal(s.triggers, 0);
    });

    test(`Llama 3.1 JSON at the start of the answer, pieces of ${size}`, () => {
      const s = summary(parse(new OutputParser({ tools: llama }), ' {"name": "f", "parameters": {"a": "}"}}', size));
      assert.deepEqual(
        s.calls.map((c) => [c.name, c.arguments]),
        [["f", { a: "}" }]],
      );
      assert.equal(s.content, "");
    });

    test(`Mistral's array of calls, pieces of ${size}`, () => {
      const text =
        '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}, "id": "abcdefghi"}, {"name": "b", "arguments": {}}]';
      const s = summary(parse(new OutputParser({ tools: mistral }), text, size));
      assert.deepEqual(
        s.calls.map((c) => [c.name, c.arguments]),
        [
          ["a", { x: 1 }],
          ["b", {}],
        ],
      );
    });
  }

  test("no call: the answer as it is; JSON inside an answer is content", () => {
    const s = summary(parse(new OutputParser({ tools: llama }), 'It is {"name": 1}', 2));
    assert.equal(s.content, 'It is {"name": 1}');
    assert.equal(s.calls.length, 0);
  });

  test("a marker followed by no JSON was content after all", () => {
    const s = summary(parse(new OutputParser({ tools: hermes }), "<tool_call> oops", 4));
    assert.equal(s.content, "<tool_call> oops");
  });

  test("thinking off: a thinking section written anyway is dropped, not mixed into the content", () => {
    const p = new OutputParser({ thinking: { open: "<think>", close: "</think>" }, dropThinking: true });
    const s = summary(parse(p, "<think>hmm</think>Yes.", 3));
    assert.deepEqual([s.thinking, s.content], ["", "Yes."]);
  });

  test("a prompt that opened the thinking section, and one that ended with the call marker", () => {
    const thinking = summary(
      parse(
        new OutputParser({ thinking: { open: "<think>", close: "</think>" }, startInThinking: true }),
        "a\n</think>b",
        1,
      ),
    );
    assert.deepEqual([thinking.thinking, thinking.content], ["a", "b"]);
    const call = summary(
      parse(
        new OutputParser({ tools: hermes, startInCall: true }),
        '\n{"name": "f", "arguments": {}}\n</tool_call>',
        5,
      ),
    );
    assert.deepEqual(
      call.calls.map((c) => c.name),
      ["f"],
    );
  });

  test("a call cut short (max tokens) is reported as far as it got", () => {
    const s = summary(parse(new OutputParser({ tools: hermes }), '<tool_call>{"name": "f", "arguments": {"a": 1', 4));
    assert.deepEqual(
      s.calls.map((c) => [c.name, c.text]),
      [["f", '{"a": 1']],
    );
  });
});
