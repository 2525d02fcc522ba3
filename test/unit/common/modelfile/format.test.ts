import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { formatModelfile, quoteValue } from "../../../../server/common/modelfile/format.ts";
import { parseModelfile } from "../../../../server/common/modelfile/parse.ts";
import type { Modelfile } from "../../../../server/common/modelfile/types.ts";
import { VALID_CASES } from "./cases.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/modelfiles/${name}`, import.meta.url), "utf8");

describe("formatModelfile round-trips: parse(format(parse(x))) equals parse(x)", () => {
  for (const c of VALID_CASES) {
    it(c.name, () => {
      const once = parseModelfile(c.src);
      assert.deepEqual(parseModelfile(formatModelfile(once)), once);
    });
  }
  for (const name of ["seed.Modelfile", "chatml-messages.Modelfile", "tools.Modelfile"]) {
    it(`fixture ${name}`, () => {
      const once = parseModelfile(fixture(name));
      assert.deepEqual(parseModelfile(formatModelfile(once)), once);
    });
  }
});

describe("formatModelfile output", () => {
  it("prints the seed Modelfile the way a person would write it", () => {
    const printed = formatModelfile(parseModelfile(fixture("seed.Modelfile")));
    assert.equal(
      printed,
      [
        "FROM ./model.gguf",
        'TEMPLATE """<|startoftext|><|im_start|>system',
        "{{ .System }}<|im_end|>",
        "<|im_start|>user",
        "{{ .Prompt }}<|im_end|>",
        "<|im_start|>assistant",
        '"""',
        "PARAMETER temperature 0.7",
        "PARAMETER top_p 0.9",
        'PARAMETER stop "<|im_end|>"',
        'PARAMETER stop "<|endoftext|>"',
        "",
      ].join("\n"),
    );
  });

  it("keeps simple values bare and quotes only when needed", () => {
    assert.equal(quoteValue("llama3.2"), "llama3.2");
    assert.equal(quoteValue("You are Mario."), "You are Mario.");
    assert.equal(quoteValue(" padded "), '" padded "');
    assert.equal(quoteValue(""), '""');
    assert.equal(quoteValue('"starts with a quote'), '"\\"starts with a quote"');
    assert.equal(quoteValue("two\nlines"), '"""two\nlines"""');
  });

  it("falls back to escaped double quotes when triple quotes cannot hold the text", () => {
    assert.equal(quoteValue('has """ inside\nand a newline'), '"has \\"\\"\\" inside\\nand a newline"');
    assert.equal(quoteValue('ends with a quote\n"'), '"ends with a quote\\n\\""');
    assert.equal(quoteValue("carriage\r\nreturn"), '"carriage\\r\\nreturn"');
  });

  it("prints MESSAGE and PARAMETER in Modelfile syntax", () => {
    const mf: Modelfile = {
      commands: [
        { name: "from", args: "x" },
        { name: "message", role: "user", args: "hi there", content: "hi there" },
        { name: "parameter", key: "num_ctx", args: "2048", value: 2048 },
        { name: "parameter", key: "stop", args: "User:", value: "User:" },
      ],
    };
    assert.equal(
      formatModelfile(mf),
      'FROM x\nMESSAGE user hi there\nPARAMETER num_ctx 2048\nPARAMETER stop "User:"\n',
    );
  });
});

// Deterministic generator of awkward strings: quotes, triple quotes, backslashes, newlines, CRs, tabs, edge spaces.
function* awkwardStrings(count: number): Generator<string> {
  const pieces = ['"', '"""', "\\", "\\n", "\n", "\r", "\r\n", "\t", " ", "#", "a", "FROM", "{{ .X }}", "é", "'", "`"];
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let n = 0; n < count; n++) {
    let s = "";
    const len = Math.floor(rand() * 8);
    for (let k = 0; k < len; k++) s += pieces[Math.floor(rand() * pieces.length)];
    yield s;
  }
}

describe("formatModelfile round-trips awkward values exactly", () => {
  it("SYSTEM, MESSAGE and stop values survive format then parse", () => {
    for (const s of awkwardStrings(500)) {
      const commands: Modelfile["commands"] = [
        { name: "from", args: "x" },
        { name: "system", args: s },
        { name: "message", role: "assistant", args: s, content: s },
      ];
      if (s !== "") commands.push({ name: "parameter", key: "stop", args: s, value: s });
      const mf: Modelfile = { commands };
      assert.deepEqual(parseModelfile(formatModelfile(mf)), mf, `value ${JSON.stringify(s)}`);
    }
  });
});
