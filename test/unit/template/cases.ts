// Template sources, data and the exact text Go's text/template prints for them (with Ollama's `json` function).
// Cases with a `deviation` differ from stock Go on purpose; the reason says how.

export interface RenderCase {
  name: string;
  src: string;
  data: Record<string, unknown>;
  want: string;
  deviation?: string;
}

const conversation = {
  System: "You are helpful.",
  Messages: [
    { Role: "user", Content: "Hi" },
    { Role: "assistant", Content: "Hello!" },
    { Role: "user", Content: "Tell me a joke." },
  ],
};

export const RENDER_CASES: RenderCase[] = [
  { name: "plain text passes through", src: "just text\n", data: {}, want: "just text\n" },
  { name: "a field", src: "Hi {{ .Prompt }}!", data: { Prompt: "there" }, want: "Hi there!" },
  { name: "nested fields", src: "{{ .A.B.C }}", data: { A: { B: { C: "deep" } } }, want: "deep" },
  { name: "dot is the data", src: "{{ . }}", data: { K: "v" }, want: "map[K:v]" },
  {
    name: "$ is the root and $.Field reaches it",
    src: "{{ with .A }}{{ .B }}/{{ $.Top }}{{ end }}",
    data: { A: { B: "inner" }, Top: "root" },
    want: "inner/root",
  },
  {
    name: "missing fields render empty",
    src: "[{{ .System }}][{{ .A.B }}]",
    data: {},
    want: "[][]",
    deviation: 'absent fields render as "" (Go: <no value>, or a nil-pointer error one level down)',
  },
  {
    name: "field lookup is case-sensitive",
    src: "[{{ .prompt }}]",
    data: { Prompt: "x" },
    want: "[]",
    deviation: 'absent fields render as ""',
  },
  {
    name: "numbers and booleans print like Go",
    src: "{{ .I }} {{ .F }} {{ .B }} {{ .L }}",
    data: { I: 3, F: 0.5, B: true, L: [1, "a", false] },
    want: "3 0.5 true [1 a false]",
  },
  {
    name: "trim markers remove whitespace on their side",
    src: "a  \n {{- .X -}} \n\t b",
    data: { X: "|" },
    want: "a|b",
  },
  { name: "a dash without a space is a negative number", src: "{{-3}}", data: {}, want: "-3" },
  { name: "comments print nothing", src: "a {{/* a comment */}} b {{- /* trimmed */ -}} c", data: {}, want: "a  bc" },
  { name: "if true", src: "{{ if .S }}yes{{ end }}", data: { S: "x" }, want: "yes" },
  {
    name: "if / else if / else",
    src: '{{ range .V }}{{ if eq . "a" }}one{{ else if eq . "b" }}two{{ else }}many{{ end }},{{ end }}',
    data: { V: ["a", "b", "c"] },
    want: "one,two,many,",
  },
  {
    name: "Go truth: empty string, 0, false, empty list and map are false",
    src: "{{ if .S }}1{{ end }}{{ if .N }}2{{ end }}{{ if .B }}3{{ end }}{{ if .L }}4{{ end }}{{ if .M }}5{{ end }}{{ if .Z }}6{{ end }}.",
    data: { S: "", N: 0, B: false, L: [], M: {}, Z: 0.0 },
    want: ".",
  },
  {
    name: "Go truth: non-empty values are true",
    src: "{{ if .S }}1{{ end }}{{ if .N }}2{{ end }}{{ if .L }}3{{ end }}{{ if .M }}4{{ end }}",
    data: { S: " ", N: -1, L: [0], M: { k: null } },
    want: "1234",
  },
  {
    name: "range sets dot to each element",
    src: "{{ range .L }}<{{ . }}>{{ end }}",
    data: { L: ["a", "b"] },
    want: "<a><b>",
  },
  {
    name: "range with index and element",
    src: "{{ range $i, $m := .Messages }}{{ $i }}:{{ $m.Role }} {{ end }}",
    data: conversation,
    want: "0:user 1:assistant 2:user ",
  },
  {
    name: "range with one variable gets the element",
    src: "{{ range $m := .Messages }}{{ $m.Content }};{{ end }}",
    data: conversation,
    want: "Hi;Hello!;Tell me a joke.;",
  },
  {
    name: "range else runs for an empty list",
    src: "{{ range .L }}x{{ else }}none{{ end }}",
    data: { L: [] },
    want: "none",
  },
  {
    name: "range over a map visits keys in sorted order",
    src: "{{ range $k, $v := .M }}{{ $k }}={{ $v }} {{ end }}",
    data: { M: { b: 2, a: 1, c: 3 } },
    want: "a=1 b=2 c=3 ",
  },
  {
    name: "break and continue",
    src: '{{ range .L }}{{ if eq . "skip" }}{{ continue }}{{ end }}{{ if eq . "stop" }}{{ break }}{{ end }}{{ . }}{{ end }}',
    data: { L: ["a", "skip", "b", "stop", "c"] },
    want: "ab",
  },
  {
    name: "with sets dot, else when empty",
    src: "{{ with .A }}[{{ . }}]{{ else }}none{{ end }}{{ with .B }}[{{ . }}]{{ else }}none{{ end }}",
    data: { A: "x", B: "" },
    want: "[x]none",
  },
  {
    name: "variables: declare, assign, use",
    src: '{{ $x := "a" }}{{ $x }}{{ $x = "b" }}{{ $x }}',
    data: {},
    want: "ab",
  },
  {
    name: "variables declared inside a range body",
    src: "{{ range .L }}{{ $d := . }}{{ $d }}{{ end }}",
    data: { L: ["p", "q"] },
    want: "pq",
  },
  {
    name: "assignment inside range updates an outer variable",
    src: '{{ $last := "" }}{{ range .L }}{{ $last = . }}{{ end }}{{ $last }}',
    data: { L: ["p", "q"] },
    want: "q",
  },
  {
    name: "pipelines pass the value as the last argument",
    src: '{{ .S | printf "%s!" | printf "%q" }}',
    data: { S: "hi" },
    want: '"hi!"',
  },
  {
    name: "parenthesized pipelines and fields on them",
    src: "{{ (index .Messages 1).Content }} {{ len (slice .Messages 1) }}",
    data: conversation,
    want: "Hello! 2",
  },
  {
    name: "eq is variadic",
    src: '{{ if eq .R "system" "user" }}y{{ else }}n{{ end }}{{ if eq .R "tool" "assistant" }}y{{ else }}n{{ end }}',
    data: { R: "user" },
    want: "yn",
  },
  {
    name: "ne lt le gt ge",
    src: '{{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1 2 }}',
    data: {},
    want: "true true true true false",
  },
  {
    name: "and/or return a deciding operand",
    src: "[{{ and .A .B }}][{{ or .E .B }}][{{ or .E .Z }}][{{ and .E .A }}]",
    data: { A: "a", B: "b", E: "", Z: 0 },
    want: "[b][b][0][]",
  },
  {
    name: "and short-circuits before a failing call",
    src: "{{ if and .L (index .L 0) }}first{{ else }}none{{ end }}",
    data: { L: [] },
    want: "none",
  },
  { name: "not", src: "{{ not .A }} {{ not .E }}", data: { A: 1, E: "" }, want: "false true" },
  {
    name: "len of list, map and string (bytes, like Go)",
    src: "{{ len .L }} {{ len .M }} {{ len .S }}",
    data: { L: [1, 2, 3], M: { a: 1 }, S: "héllo" },
    want: "3 1 6",
  },
  {
    name: "len of an absent list is 0",
    src: "{{ len .Tools }}",
    data: {},
    want: "0",
    deviation: "an absent list has length 0 (Go: len of nil pointer)",
  },
  {
    name: "index into lists and maps, nested",
    src: '{{ index .L 1 }} {{ index .M "k" }} {{ index .N 0 "x" }}',
    data: { L: ["a", "b"], M: { k: "v" }, N: [{ x: "deep" }] },
    want: "b v deep",
  },
  {
    name: "slice of lists and strings",
    src: "{{ slice .L 1 }} {{ slice .L 0 1 }} {{ slice .S 1 3 }}",
    data: { L: ["a", "b", "c"], S: "hello" },
    want: "[b c] [a] el",
  },
  {
    name: "json encodes like Go's json.Marshal",
    src: "{{ json .T }} {{ json .S }} {{ json .N }}",
    data: { T: { name: "get<weather>", args: ["a&b"] }, S: 'q"uote', N: null },
    want: '{"name":"get\\u003cweather\\u003e","args":["a\\u0026b"]} "q\\"uote" null',
    deviation: "object keys keep their order (Go sorts map keys; Ollama's tool structs have a fixed order)",
  },
  {
    name: "print and println space operands like Go",
    src: '{{ print 1 2 "a" "b" 3 }}|{{ println 1 "a" }}|',
    data: {},
    want: "1 2ab3|1 a\n|",
  },
  {
    name: "printf verbs",
    src: '{{ printf "%s %d %v %q %t %5.2f|%-4s|%03d %x %%" "s" 42 .L "q" true 3.14159 "ab" 7 255 }}',
    data: { L: ["x", 1] },
    want: 's 42 [x 1] "q" true  3.14|ab  |007 ff %',
  },
  {
    name: "printf reports wrong and missing operands like Go",
    src: '{{ printf "%d %s" "x" }}',
    data: {},
    want: "%!d(string=x) %!s(MISSING)",
  },
  {
    name: "string literals: escapes and raw strings",
    src: '{{ "tab\\there\\n" }}{{ `raw\\n` }}',
    data: {},
    want: "tab\there\nraw\\n",
  },
  {
    name: "number, bool and character literals",
    src: "{{ 1.5 }} {{ 0x10 }} {{ true }} {{ 'a' }} {{ 1e3 }}",
    data: {},
    want: "1.5 16 true 97 1000",
  },
  { name: "nil is a valid argument", src: "{{ eq .Missing nil }}", data: { Missing: null }, want: "true" },
  { name: "newlines inside actions", src: "{{ if\n  .A\n}}yes{{ end }}", data: { A: true }, want: "yes" },
  { name: "range over an integer", src: "{{ range $i := 3 }}{{ $i }}{{ end }}", data: {}, want: "012" },
];
