import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseModelfile } from "../../../../server/common/modelfile/parse.ts";
import { ModelfileSyntaxError } from "../../../../server/common/modelfile/errors.ts";
import { PARAMETER_TYPES } from "../../../../server/common/modelfile/parameters.ts";
import { AppError } from "../../../../server/common/errors.ts";
import { ALL_PARAMETERS, ERROR_CASES, VALID_CASES } from "./cases.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/modelfiles/${name}`, import.meta.url), "utf8");

describe("parseModelfile: valid input", () => {
  for (const c of VALID_CASES) {
    it(c.name, () => {
      assert.deepEqual(parseModelfile(c.src).commands, c.want);
    });
  }
});

describe("parseModelfile: errors", () => {
  for (const c of ERROR_CASES) {
    it(c.name, () => {
      assert.throws(
        () => parseModelfile(c.src),
        (e: unknown) => {
          assert.ok(e instanceof ModelfileSyntaxError);
          assert.ok(e instanceof AppError);
          assert.equal(e.code, "MODELFILE_SYNTAX");
          assert.equal(e.status, 400);
          assert.equal(e.message, c.message);
          assert.equal(e.line, c.line);
          return true;
        },
      );
    });
  }
});

describe("parseModelfile: coverage of the tables and fixtures", () => {
  it("has at least 40 cases", () => {
    assert.ok(VALID_CASES.length + ERROR_CASES.length >= 40);
  });

  it("the all-parameters case covers every known parameter", () => {
    assert.deepEqual(ALL_PARAMETERS.map(([k]) => k).sort(), Object.keys(PARAMETER_TYPES).sort());
  });

  it("reads the seed Modelfile fixture", () => {
    const mf = parseModelfile(fixture("seed.Modelfile"));
    assert.deepEqual(
      mf.commands.map((c) => c.name),
      ["from", "template", "parameter", "parameter", "parameter", "parameter"],
    );
    const template = mf.commands[1];
    assert.equal(
      template?.name === "template" && template.args,
      "<|startoftext|><|im_start|>system\n{{ .System }}<|im_end|>\n<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("reads the ChatML and tools fixtures", () => {
    const chatml = parseModelfile(fixture("chatml-messages.Modelfile"));
    assert.deepEqual(
      chatml.commands.filter((c) => c.name === "message").map((c) => c.name === "message" && [c.role, c.content]),
      [
        ["user", "What is 2+2?"],
        ["assistant", "4"],
      ],
    );
    const tools = parseModelfile(fixture("tools.Modelfile"));
    assert.equal(tools.commands[0]?.name === "from" && tools.commands[0].args, "qwen2.5:0.5b");
    assert.match(tools.commands[1]?.args ?? "", /\{\{ json \. \}\}/);
  });
});
