import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_TOOL_CALL_FORMAT } from "../../../server/chat/features.ts";
import { boundedNumbers, renameRules, toolCallsGbnf } from "../../../server/engine/tool-grammar.ts";

const compiled = `root ::= "{" ws "\\"a\\"" ":" integer-number-rule "}" "\\n\\n\\n\\n" [\\n]*
integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?
ws ::= [ \\t]?`;

test("rule names are prefixed outside literals, classes and counts; the trailing newlines go", () => {
  assert.equal(
    renameRules(compiled, "t0-").split("\n")[0],
    "root".replace("root", "t0-root") + ' ::= "{" t0-ws "\\"a\\"" ":" t0-integer-number-rule "}"',
  );
  assert.match(renameRules(compiled, "t0-"), /^t0-integer-number-rule ::= "-"\? \("0" \| \[1-9\] \[0-9\]\{0,15\}\)/m);
});

test("integers lose the exponent; other numbers keep two exponent digits at most", () => {
  assert.doesNotMatch(boundedNumbers(compiled).split("\n")[1]!, /eE/);
  const fractional = 'n ::= "0" ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';
  assert.equal(boundedNumbers(fractional), 'n ::= "0" ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?');
});

test("calls in the format's shape; a named function is the only one; parallel calls repeat the marker", () => {
  const tools = [
    { name: "a", parameters: { type: "object" } },
    { name: "b", parameters: { type: "object" } },
  ];
  const args = () => 'root ::= "{}"';
  const hermes = { ...DEFAULT_TOOL_CALL_FORMAT, start: "<tool_call>", end: "</tool_call>" };
  const g = toolCallsGbnf(hermes, { tools, choice: "auto", parallel: true }, args);
  assert.match(g, /^root ::= sp call sp "<\/tool_call>" \( sp "<tool_call>" sp call sp "<\/tool_call>" \)\*$/m);
  assert.match(g, /\( "\\"a\\"" sp "," sp "\\"arguments\\"" sp ":" sp t0-root \| "\\"b\\"" .* t1-root \)/);
  const named = toolCallsGbnf(hermes, { tools, choice: { name: "b" }, parallel: false }, args);
  assert.doesNotMatch(named, /"\\"a\\""/);
  assert.match(named, /^root ::= sp call sp "<\/tool_call>"$/m);
  const mistral = { ...DEFAULT_TOOL_CALL_FORMAT, start: "[TOOL_CALLS]", array: true, idKey: true };
  const m = toolCallsGbnf(mistral, { tools, choice: "required", parallel: true }, args);
  assert.match(m, /^root ::= sp "\[" sp call \( sp "," sp call \)\* sp "\]"$/m);
  assert.match(m, /"\\"id\\"" sp ":" sp "\\"" \[a-zA-Z0-9\]\{9\} "\\""/);
});
