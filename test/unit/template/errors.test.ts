import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AppError } from "../../../server/common/errors.ts";
import { TemplateError, parseTemplate, renderTemplate } from "../../../server/template/index.ts";

interface ErrorCase {
  name: string;
  src: string;
  data?: unknown;
  message: string;
  line: number;
  col: number;
}

const PARSE_ERRORS: ErrorCase[] = [
  { name: "unclosed action", src: "Hello {{ .Name", message: "template:1:7: unclosed action", line: 1, col: 7 },
  {
    name: "unclosed action on a later line",
    src: "a\nb {{ if .X }}\n{{ .Y",
    message: "template:3:1: unclosed action",
    line: 3,
    col: 1,
  },
  { name: "unexpected {{end}}", src: "text {{ end }}", message: "template:1:9: unexpected {{end}}", line: 1, col: 9 },
  { name: "unexpected {{else}}", src: "{{ else }}", message: "template:1:4: unexpected {{else}}", line: 1, col: 4 },
  {
    name: "if without end",
    src: "x\n{{ if .A }}yes",
    message: "template:2:1: unclosed {{if}}: missing {{end}}",
    line: 2,
    col: 1,
  },
  {
    name: "range without end",
    src: "{{ range .M }}{{ if .A }}{{ end }}",
    message: "template:1:1: unclosed {{range}}: missing {{end}}",
    line: 1,
    col: 1,
  },
  {
    name: "two elses",
    src: "{{ if .A }}a{{ else }}b{{ else }}c{{ end }}",
    message: "template:1:27: unexpected {{else}}: {{if}} already has one",
    line: 1,
    col: 27,
  },
  {
    name: "else if inside range",
    src: "{{ range .A }}{{ else if .B }}{{ end }}",
    message: "template:1:18: {{else if}} is not allowed inside {{range}}",
    line: 1,
    col: 18,
  },
  {
    name: "unknown function",
    src: "{{ upper .Name }}",
    message: 'template:1:4: function "upper" not defined',
    line: 1,
    col: 4,
  },
  { name: "undefined variable", src: "{{ $x }}", message: 'template:1:4: undefined variable "$x"', line: 1, col: 4 },
  {
    name: "variable used outside its range",
    src: "{{ range $m := .M }}{{ end }}{{ $m }}",
    message: 'template:1:33: undefined variable "$m"',
    line: 1,
    col: 33,
  },
  {
    name: "assignment to an undeclared variable",
    src: "{{ $y = 1 }}",
    message: 'template:1:4: undefined variable "$y"',
    line: 1,
    col: 4,
  },
  {
    name: "break outside range",
    src: "{{ if .A }}{{ break }}{{ end }}",
    message: "template:1:15: {{break}} outside {{range}}",
    line: 1,
    col: 15,
  },
  {
    name: "missing condition",
    src: "{{ if }}x{{ end }}",
    message: "template:1:7: missing value for if",
    line: 1,
    col: 7,
  },
  {
    name: "unterminated string",
    src: '{{ "abc }}',
    message: "template:1:4: unterminated quoted string",
    line: 1,
    col: 4,
  },
  { name: "unknown escape", src: '{{ "\\q" }}', message: "template:1:5: unknown escape sequence", line: 1, col: 5 },
  { name: "unclosed comment", src: "{{/* note", message: "template:1:1: unclosed comment", line: 1, col: 1 },
  {
    name: "comment followed by code",
    src: "{{/* c */ .X }}",
    message: "template:1:10: comment ends before closing delimiter",
    line: 1,
    col: 10,
  },
  {
    name: "unbalanced parenthesis",
    src: "{{ (len .X }}",
    message: 'template:1:12: unexpected "}}" in paren',
    line: 1,
    col: 12,
  },
  {
    name: "stray right parenthesis",
    src: "{{ len .X) }}",
    message: "template:1:10: unexpected right paren",
    line: 1,
    col: 10,
  },
  {
    name: "unsupported define",
    src: '{{ define "x" }}{{ end }}',
    message: "template:1:4: {{define}} is not supported in chat templates",
    line: 1,
    col: 4,
  },
  {
    name: "two range variables in an if",
    src: "{{ if $a, $b := .X }}{{ end }}",
    message: "template:1:9: too many declarations in if",
    line: 1,
    col: 9,
  },
];

const EXEC_ERRORS: ErrorCase[] = [
  {
    name: "index out of range",
    src: "{{ index .M 5 }}",
    data: { M: [1] },
    message: "template:1:4: executing <index .M 5>: error calling index: index out of range: 5",
    line: 1,
    col: 4,
  },
  {
    name: "field of a string",
    src: "\n  {{ .System.Name }}",
    data: { System: "s" },
    message: "template:2:6: executing <.System.Name>: can't evaluate field Name in type string",
    line: 2,
    col: 6,
  },
  {
    name: "argument to a non-function",
    src: "{{ .A .B }}",
    data: { A: 1, B: 2 },
    message: "template:1:4: executing <.A>: can't give argument to non-function .A",
    line: 1,
    col: 4,
  },
  {
    name: "comparing a string with a number",
    src: '{{ eq .A "1" }}',
    data: { A: 1 },
    message: 'template:1:4: executing <eq .A "1">: error calling eq: incompatible types for comparison: int and string',
    line: 1,
    col: 4,
  },
  {
    name: "wrong number of arguments",
    src: "{{ len .A .B }}",
    data: { A: [], B: [] },
    message: "template:1:4: executing <len .A .B>: error calling len: wrong number of args for len: want 1 got 2",
    line: 1,
    col: 4,
  },
  {
    name: "ranging over a string",
    src: "{{ range .S }}{{ end }}",
    data: { S: "abc" },
    message: "template:1:10: executing <.S>: range can't iterate over string abc",
    line: 1,
    col: 10,
  },
  {
    name: "nil as a command",
    src: "{{ nil }}",
    data: {},
    message: "template:1:4: executing <nil>: nil is not a command",
    line: 1,
    col: 4,
  },
];

function expectError(c: ErrorCase, run: () => unknown): void {
  assert.throws(run, (e: unknown) => {
    assert.ok(e instanceof TemplateError);
    assert.ok(e instanceof AppError);
    assert.equal(e.code, "TEMPLATE_ERROR");
    assert.equal(e.message, c.message);
    assert.equal(e.line, c.line);
    assert.equal(e.col, c.col);
    return true;
  });
}

describe("template parse errors", () => {
  for (const c of PARSE_ERRORS) it(c.name, () => expectError(c, () => parseTemplate(c.src)));
});

describe("template execution errors", () => {
  for (const c of EXEC_ERRORS) {
    it(c.name, () => {
      parseTemplate(c.src); // parses fine; fails only when run
      expectError(c, () => renderTemplate(c.src, c.data));
    });
  }
});

describe("template execution limits", () => {
  it("stops a range that would run for too long", () => {
    assert.throws(
      () => renderTemplate("{{ range 1000000000000 }}{{ end }}", {}),
      (e: unknown) => e instanceof TemplateError && /execution exceeds \d+ steps/.test(e.message) && e.col === 1,
    );
  });

  it("stops output that grows too large", () => {
    const big = "x".repeat(1 << 20);
    assert.throws(
      () => renderTemplate("{{ range .L }}{{ $.Big }}{{ end }}", { Big: big, L: Array.from({ length: 64 }, () => 0) }),
      (e: unknown) => e instanceof TemplateError && /output exceeds \d+ characters/.test(e.message),
    );
  });
});
