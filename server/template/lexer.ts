// Lexer for Go text/template: splits the source into text and action tokens. Whitespace trim markers
// (`{{- ` and ` -}}`) are applied here, to the neighbouring text, as Go's lexer does; comments are dropped.
import { TemplateError } from "./errors.ts";

export type TokenKind =
  | "text"
  | "leftDelim"
  | "rightDelim"
  | "identifier"
  | "field"
  | "variable"
  | "dot"
  | "string"
  | "number"
  | "bool"
  | "nil"
  | "leftParen"
  | "rightParen"
  | "pipe"
  | "declare"
  | "assign"
  | "comma"
  | "eof";

export interface Token {
  kind: TokenKind;
  pos: number;
  end: number;
  /** Text, identifier/field/variable name, or decoded string literal. */
  text: string;
  /** Numeric or boolean literal value. */
  value?: number | boolean;
  /** Whether whitespace separates this token from the previous one inside an action (fields chain only when not). */
  spaced: boolean;
}

const isSpace = (ch: string | undefined) => ch === " " || ch === "\t" || ch === "\r" || ch === "\n";
const isAlnum = (ch: string | undefined) => ch !== undefined && /[\p{L}\p{Nd}_]/u.test(ch);
const SIMPLE_ESCAPES: Record<string, string> = {
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  '"': '"',
  "'": "'",
};
const NUMBER_RE = /^[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][+-]?\d+)?)/;
const TRIM_CHARS = /[ \t\r\n]+$/;

function parseNumber(literal: string): number {
  const clean = literal.replace(/_/g, "");
  const sign = clean.startsWith("-") ? -1 : 1;
  const body = clean.replace(/^[+-]/, "");
  if (/^0[oO]/.test(body)) return sign * parseInt(body.slice(2), 8);
  if (/^0[bB]/.test(body)) return sign * parseInt(body.slice(2), 2);
  return sign * Number(body);
}

export function lex(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let trimNextText = false;
  const fail = (at: number, message: string): never => {
    throw new TemplateError(src, at, message);
  };
  const push = (kind: TokenKind, pos: number, end: number, text: string, spaced: boolean, value?: number | boolean) => {
    tokens.push(value === undefined ? { kind, pos, end, text, spaced } : { kind, pos, end, text, spaced, value });
  };

  while (i < src.length) {
    // Text up to the next action.
    const open = src.indexOf("{{", i);
    const textEnd = open === -1 ? src.length : open;
    let text = src.slice(i, textEnd);
    if (trimNextText) text = text.replace(/^[ \t\r\n]+/, "");
    const trimLeft = open !== -1 && src[open + 2] === "-" && isSpace(src[open + 3]);
    if (trimLeft) text = text.replace(TRIM_CHARS, "");
    if (text !== "") push("text", i, textEnd, text, false);
    trimNextText = false;
    if (open === -1) break;

    const actionStart = open;
    i = open + (trimLeft ? 4 : 2);
    push("leftDelim", actionStart, i, "{{", false);

    // Comments must sit directly inside the delimiters: {{/* ... */}} or {{- /* ... */ -}}.
    if (src.startsWith("/*", i)) {
      const close = src.indexOf("*/", i + 2);
      if (close === -1) fail(actionStart, "unclosed comment");
      i = close + 2;
      if (src.startsWith("}}", i)) i += 2;
      else if (isSpace(src[i]) && src.startsWith("-}}", i + 1)) {
        i += 4;
        trimNextText = true;
      } else fail(i, "comment ends before closing delimiter");
      tokens.pop(); // a comment yields no tokens
      continue;
    }

    // Inside the action.
    let spaced = false;
    let parenDepth = 0;
    for (;;) {
      if (i >= src.length) fail(actionStart, "unclosed action");
      const ch = src[i]!;
      const start = i;
      if (isSpace(ch)) {
        if (src.startsWith("-}}", i + 1)) {
          push("rightDelim", i, i + 4, "}}", true);
          i += 4;
          trimNextText = true;
          break;
        }
        i++;
        spaced = true;
        continue;
      }
      if (src.startsWith("}}", i)) {
        push("rightDelim", i, i + 2, "}}", spaced);
        i += 2;
        break;
      }
      if (ch === "(") {
        parenDepth++;
        push("leftParen", i, ++i, ch, spaced);
      } else if (ch === ")") {
        if (parenDepth === 0) fail(i, "unexpected right paren");
        parenDepth--;
        push("rightParen", i, ++i, ch, spaced);
      } else if (ch === "|") push("pipe", i, ++i, ch, spaced);
      else if (ch === ",") push("comma", i, ++i, ch, spaced);
      else if (ch === "=") push("assign", i, ++i, ch, spaced);
      else if (src.startsWith(":=", i)) {
        i += 2;
        push("declare", start, i, ":=", spaced);
      } else if (ch === '"') {
        let value = "";
        i++;
        for (;;) {
          const c = src[i];
          if (c === undefined || c === "\n") fail(start, "unterminated quoted string");
          if (c === '"') {
            i++;
            break;
          }
          if (c === "\\") {
            const [decoded, next] = readEscape(src, i + 1, '"', fail);
            value += decoded;
            i = next;
          } else {
            value += c;
            i++;
          }
        }
        push("string", start, i, value, spaced);
      } else if (ch === "`") {
        const close = src.indexOf("`", i + 1);
        if (close === -1) fail(start, "unterminated raw quoted string");
        push("string", start, close + 1, src.slice(i + 1, close), spaced);
        i = close + 1;
      } else if (ch === "'") {
        // A character constant is a number in Go templates.
        let value: string;
        if (src[i + 1] === "\\") [value, i] = readEscape(src, i + 2, "'", fail);
        else {
          const cp = src.codePointAt(i + 1);
          value = cp === undefined ? "" : String.fromCodePoint(cp);
          i += 1 + value.length;
        }
        if (value === "" || src[i] !== "'") fail(start, "malformed character constant");
        i++;
        push("number", start, i, src.slice(start, i), spaced, value.codePointAt(0)!);
      } else if (ch === "$") {
        i++;
        while (isAlnum(src[i])) i++;
        push("variable", start, i, src.slice(start, i), spaced);
      } else if (ch === "." && isAlnum(src[i + 1]) && !/\d/.test(src[i + 1]!)) {
        i++;
        while (isAlnum(src[i])) i++;
        push("field", start, i, src.slice(start + 1, i), spaced);
      } else if (
        /[0-9+\-.]/.test(ch) &&
        NUMBER_RE.test(src.slice(i, i + 64)) &&
        (ch !== "." || /\d/.test(src[i + 1] ?? ""))
      ) {
        const literal = NUMBER_RE.exec(src.slice(i, i + 64))![0];
        if (isAlnum(src[i + literal.length]))
          fail(start, `bad number syntax: "${src.slice(i, i + literal.length + 1)}"`);
        const value = parseNumber(literal);
        if (Number.isNaN(value)) fail(start, `bad number syntax: "${literal}"`);
        i += literal.length;
        push("number", start, i, literal, spaced, value);
      } else if (ch === ".") push("dot", i, ++i, ch, spaced);
      else if (isAlnum(ch)) {
        while (isAlnum(src[i])) i++;
        const word = src.slice(start, i);
        if (word === "true" || word === "false") push("bool", start, i, word, spaced, word === "true");
        else if (word === "nil") push("nil", start, i, word, spaced);
        else push("identifier", start, i, word, spaced);
      } else fail(i, `unrecognized character in action: ${JSON.stringify(ch)}`);
      spaced = false;
    }
  }
  push("eof", src.length, src.length, "", false);
  return tokens;
}

/** Decodes one Go escape sequence starting after the backslash; returns the text and the index after it. */
function readEscape(
  src: string,
  at: number,
  quote: string,
  fail: (at: number, msg: string) => never,
): [string, number] {
  const c = src[at];
  if (c !== undefined && c in SIMPLE_ESCAPES && (c !== "'" || quote === "'") && (c !== '"' || quote === '"')) {
    return [SIMPLE_ESCAPES[c]!, at + 1];
  }
  const hexLen = c === "x" ? 2 : c === "u" ? 4 : c === "U" ? 8 : 0;
  if (hexLen > 0) {
    const hex = src.slice(at + 1, at + 1 + hexLen);
    if (!new RegExp(`^[0-9a-fA-F]{${hexLen}}$`).test(hex)) fail(at - 1, "invalid escape sequence");
    return [String.fromCodePoint(parseInt(hex, 16)), at + 1 + hexLen];
  }
  const octal = src.slice(at, at + 3);
  if (/^[0-7]{3}$/.test(octal)) return [String.fromCodePoint(parseInt(octal, 8)), at + 3];
  return fail(at - 1, "unknown escape sequence");
}
