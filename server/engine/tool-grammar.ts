// The grammar of a request's tool calls, as llama-server builds it: each tool's call (its name, then arguments that
// match its parameters' JSON schema) in the form the model's template shows (features.ts: the marker's closing
// counterpart, an array of calls, the arguments' key, an id). The grammar starts right after the marker that opens a
// call: the generation loop applies it once the marker is written (lazily), or from the first token when a call is
// required (the prompt then ends with the marker). Each tool's arguments grammar comes from node-llama-cpp's JSON
// schema compiler (the one `format` uses), its rules renamed apart.
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import type { ToolCallFormat } from "../chat/features.ts";
import type { FunctionTool, ToolsRequest } from "../chat/types.ts";
import { withDefinitionsAsDefs } from "../common/json-schema-check.ts";

/** A GBNF string literal of `text`. */
export const gbnfLiteral = (text: string): string =>
  `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\r/g, "\\r")}"`;

/** A literal of `value` written as JSON (a key or a string value). */
const jsonLiteral = (value: string): string => gbnfLiteral(JSON.stringify(value));

/**
 * `gbnf` with every rule name prefixed (so several grammars share one file) and its root's trailing newlines (what
 * node-llama-cpp's JSON grammars end with) dropped. Names are read outside string literals, character classes and
 * repetition counts.
 */
export function renameRules(gbnf: string, prefix: string): string {
  let out = "";
  for (let i = 0; i < gbnf.length;) {
    const c = gbnf[i]!;
    if (c === '"' || c === "[") {
      const close = c === '"' ? '"' : "]";
      let j = i + 1;
      while (j < gbnf.length && gbnf[j] !== close) j += gbnf[j] === "\\" ? 2 : 1;
      out += gbnf.slice(i, j + 1);
      i = j + 1;
    } else if (c === "{") {
      const j = gbnf.indexOf("}", i);
      out += gbnf.slice(i, j + 1);
      i = j + 1;
    } else if (/[a-zA-Z]/.test(c)) {
      const name = /^[a-zA-Z][a-zA-Z0-9_-]*/.exec(gbnf.slice(i))![0];
      out += prefix + name;
      i += name.length;
    } else {
      out += c;
      i++;
    }
  }
  return out.replace(/ "\\n\\n\\n\\n" \[\\n\]\*$/m, "");
}

const EMPTY_PARAMETERS = { type: "object", properties: {} };

/** node-llama-cpp's exponent of a JSON number: up to 16 digits, so `1E4787878127888878` (Infinity) fits. */
const COMPILER_EXPONENT = '([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';

/**
 * Numbers that parse as what the schema says: an integer without an exponent, any number's exponent at most two digits
 * (JSON.parse reads a longer one as Infinity, which is no number a tool can take).
 */
export function boundedNumbers(gbnf: string): string {
  return gbnf
    .split("\n")
    .map((line) =>
      line.startsWith("integer-number-rule ::=")
        ? line.replace(` ${COMPILER_EXPONENT}`, "")
        : line.replaceAll(COMPILER_EXPONENT, "([eE] [-+]? [0-9]{1,2})?"),
    )
    .join("\n");
}

/** Whitespace between tokens of a call (bounded: a model cannot pad forever). */
const SPACE_RULE = "sp ::= ([ \\t\\n] [ \\t]{0,3})?";

/** The GBNF text of the calls of `tools` in `format`; `argumentsGbnf` compiles a parameters schema. */
export function toolCallsGbnf(
  format: ToolCallFormat,
  tools: ToolsRequest,
  argumentsGbnf: (schema: Record<string, unknown>) => string,
): string {
  const chosen: FunctionTool[] =
    typeof tools.choice === "object"
      ? tools.tools.filter((t) => t.name === (tools.choice as { name: string }).name)
      : tools.tools;
  const rules: string[] = [SPACE_RULE];
  const alternatives = chosen.map((t, i) => {
    const prefix = `t${i}-`;
    rules.push(renameRules(boundedNumbers(argumentsGbnf(t.parameters ?? EMPTY_PARAMETERS)), prefix));
    const id = format.idKey ? ` sp "," sp ${jsonLiteral("id")} sp ":" sp "\\"" [a-zA-Z0-9]{9} "\\""` : "";
    return `${jsonLiteral(t.name)} sp "," sp ${jsonLiteral(format.argumentsKey)} sp ":" sp ${prefix}root${id}`;
  });
  rules.push(`call ::= "{" sp ${jsonLiteral(format.nameKey)} sp ":" sp ( ${alternatives.join(" | ")} ) sp "}"`);
  const parallel = tools.parallel && (format.array || format.end !== "");
  let root: string;
  if (format.array) root = `sp "[" sp call ${parallel ? '( sp "," sp call )* ' : ""}sp "]"`;
  else if (format.end !== "") {
    const closed = `sp call sp ${gbnfLiteral(format.end)}`;
    root = parallel ? `${closed} ( sp ${gbnfLiteral(format.start)} ${closed} )*` : closed;
  } else root = "sp call";
  return [`root ::= ${root}`, ...rules].join("\n");
}

/** Compiled tool-call grammars, cached by their text (and each tool's arguments grammar by its schema). */
export class ToolGrammars {
  private readonly llama: Llama;
  private readonly argumentGbnf = new Map<string, Promise<string>>();
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(llama: Llama) {
    this.llama = llama;
  }

  async get(format: ToolCallFormat, tools: ToolsRequest): Promise<LlamaGrammar> {
    const schemas = new Map<string, string>();
    for (const t of tools.tools) {
      const key = JSON.stringify(t.parameters ?? EMPTY_PARAMETERS);
      schemas.set(key, await this.argumentsGbnf(key));
    }
    const text = toolCallsGbnf(format, tools, (s) => schemas.get(JSON.stringify(s))!);
    return cachedIn(this.grammars, text, () => this.llama.createGrammar({ grammar: text }));
  }

  private argumentsGbnf(schemaJson: string): Promise<string> {
    return cachedIn(this.argumentGbnf, schemaJson, async () => {
      const schema = withDefinitionsAsDefs(JSON.parse(schemaJson));
      const grammar = await this.llama.createGrammarForJsonSchema(
        schema as Parameters<Llama["createGrammarForJsonSchema"]>[0],
      );
      return grammar.grammar;
    });
  }
}

function cachedIn<T>(cache: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let p = cache.get(key);
  if (!p) {
    p = make();
    if (cache.size >= 128) cache.delete(cache.keys().next().value!);
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}
