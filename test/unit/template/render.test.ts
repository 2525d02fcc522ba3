// Expected strings were checked against Go's text/template (Go 1.26) with Ollama's `json` function,
// except where a case documents a deliberate deviation.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseModelfile } from "../../../server/common/modelfile/parse.ts";
import { executeTemplate, parseTemplate, renderTemplate, templateIdentifiers } from "../../../server/template/index.ts";
import { RENDER_CASES } from "./cases.ts";

function modelfileTemplate(file: string): string {
  const mf = parseModelfile(readFileSync(new URL(`../../fixtures/modelfiles/${file}`, import.meta.url), "utf8"));
  const template = mf.commands.find((c) => c.name === "template");
  assert.ok(template, `${file} has a TEMPLATE`);
  return template.args;
}

describe("renderTemplate", () => {
  for (const c of RENDER_CASES) {
    it(c.name, () => {
      assert.equal(renderTemplate(c.src, c.data), c.want);
    });
  }
});

describe("chat templates from Modelfiles", () => {
  it("the seed template (TEMPLATE in the seed Modelfile) with System and Prompt", () => {
    const out = renderTemplate(modelfileTemplate("seed.Modelfile"), { System: "You are helpful.", Prompt: "Hi" });
    assert.equal(
      out,
      "<|startoftext|><|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("the seed template with no System renders an empty system block", () => {
    const out = renderTemplate(modelfileTemplate("seed.Modelfile"), { Prompt: "Hi" });
    assert.equal(
      out,
      "<|startoftext|><|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("Ollama's ChatML template ranges over .Messages", () => {
    const src =
      "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n";
    assert.equal(src, modelfileTemplate("chatml-messages.Modelfile"));
    const out = renderTemplate(src, {
      Messages: [
        { Role: "system", Content: "Be brief." },
        { Role: "user", Content: "Hi" },
        { Role: "assistant", Content: "Hello!" },
        { Role: "user", Content: "Bye" },
      ],
    });
    assert.equal(
      out,
      [
        "<|im_start|>system",
        "Be brief.<|im_end|>",
        "<|im_start|>user",
        "Hi<|im_end|>",
        "<|im_start|>assistant",
        "Hello!<|im_end|>",
        "<|im_start|>user",
        "Bye<|im_end|>",
        "<|im_start|>assistant",
        "",
      ].join("\n"),
    );
  });

  const tool = {
    function: {
      description: "Get the weather",
      name: "get_weather",
      parameters: { properties: { city: { type: "string" } }, required: ["city"], type: "object" },
    },
    type: "function",
  };

  it("a real-world tools template: system, tools as JSON, tool calls, tool results, last-turn detection", () => {
    const out = renderTemplate(modelfileTemplate("tools.Modelfile"), {
      System: "You are helpful.",
      Tools: [tool],
      Messages: [
        { Role: "user", Content: "Weather in Paris?" },
        {
          Role: "assistant",
          Content: "",
          ToolCalls: [{ Function: { Name: "get_weather", Arguments: { city: "Paris" } } }],
        },
        { Role: "tool", Content: "18C and sunny" },
        { Role: "assistant", Content: "It is 18C and sunny." },
        { Role: "user", Content: "Thanks!" },
      ],
    });
    assert.equal(
      out,
      [
        "<|im_start|>system",
        "You are helpful.",
        "",
        "# Tools",
        "<tools>",
        '{"function":{"description":"Get the weather","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},"type":"function"}',
        "</tools><|im_end|>",
        "<|im_start|>user",
        "Weather in Paris?<|im_end|>",
        "<|im_start|>assistant",
        "<tool_call>",
        '{"name": "get_weather", "arguments": {"city":"Paris"}}',
        "</tool_call><|im_end|>",
        "<|im_start|>user",
        "<tool_response>",
        "18C and sunny",
        "</tool_response><|im_end|>",
        "<|im_start|>assistant",
        "It is 18C and sunny.<|im_end|>",
        "<|im_start|>user",
        "Thanks!<|im_end|>",
        "<|im_start|>assistant",
        "",
      ].join("\n"),
    );
  });

  it("the same template without system or tools, ending on an assistant turn", () => {
    const out = renderTemplate(modelfileTemplate("tools.Modelfile"), {
      System: "",
      Tools: [],
      Messages: [
        { Role: "assistant", Content: "Welcome." },
        { Role: "user", Content: "Hi" },
      ],
    });
    assert.equal(
      out,
      "<|im_start|>assistant\nWelcome.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n(conversation starts with assistant)",
    );
  });
});

describe("parseTemplate", () => {
  it("gives a reusable tree: one parse, many renders", () => {
    const tpl = parseTemplate("{{ range .Messages }}{{ .Content }};{{ end }}");
    assert.equal(executeTemplate(tpl, { Messages: [{ Content: "a" }] }), "a;");
    assert.equal(executeTemplate(tpl, { Messages: [{ Content: "b" }, { Content: "c" }] }), "b;c;");
    assert.equal(executeTemplate(tpl, {}), "");
  });

  it("lists the identifiers a template uses (how Ollama decides to pass .Messages)", () => {
    assert.deepEqual(templateIdentifiers(parseTemplate(modelfileTemplate("seed.Modelfile"))), ["prompt", "system"]);
    assert.deepEqual(templateIdentifiers(parseTemplate(modelfileTemplate("chatml-messages.Modelfile"))), [
      "content",
      "messages",
      "role",
    ]);
    assert.ok(templateIdentifiers(parseTemplate(modelfileTemplate("tools.Modelfile"))).includes("toolcalls"));
  });
});
