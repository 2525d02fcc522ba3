import assert from "node:assert/strict";
import { test } from "node:test";
import { formatShowSummary } from "../../../server/cli/show-summary.ts";

const details = {
  parent_model: "",
  format: "gguf" as const,
  family: "llama",
  families: ["llama"],
  parameter_size: "135M",
  quantization_level: "Q4_1",
};

test("the summary lists model facts, capabilities, parameters, system and the license head", () => {
  const text = formatShowSummary({
    details,
    model_info: { "general.architecture": "llama", "llama.context_length": 8192, "llama.embedding_length": 576 },
    capabilities: ["completion", "tools"],
    parameters: `${"stop".padEnd(30)} "<|im_end|>"\n${"temperature".padEnd(30)} 0.7`,
    system: "You are helpful.",
    license: "Apache License\nVersion 2.0\nmore text that is not shown",
  });
  assert.equal(
    text,
    [
      "  Model",
      "    architecture        llama",
      "    parameters          135M",
      "    context length      8192",
      "    embedding length    576",
      "    quantization        Q4_1",
      "",
      "  Capabilities",
      "    completion",
      "    tools",
      "",
      "  Parameters",
      `    stop            "<|im_end|>"`,
      "    temperature     0.7",
      "",
      "  System",
      "    You are helpful.",
      "",
      "  License",
      "    Apache License",
      "    Version 2.0",
      "",
      "",
    ].join("\n"),
  );
});

test("sections without content are left out", () => {
  const text = formatShowSummary({ details, model_info: {}, capabilities: ["completion"] });
  assert.ok(
    !text.includes("Parameters") &&
      !text.includes("System") &&
      !text.includes("License") &&
      !text.includes("context length"),
    text,
  );
  assert.match(text, /architecture\s+llama/);
});
