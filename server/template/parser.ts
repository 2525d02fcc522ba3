// Recursive-descent parser from tokens to the template AST. Checks at parse time what Go checks at parse time:
// balanced control structures, known functions, declared variables, break/continue only inside range.
import type { ArgNode, CommandNode, Node, PipeNode, Template } from "./ast.ts";
import { TemplateError } from "./errors.ts";
import { BUILTIN_NAMES } from "./functions.ts";
import { lex } from "./lexer.ts";
import type { Token } from "./lexer.ts";

type Control = "if" | "range" | "with";
/** How a list ended: at EOF, or at an {{end}} / {{else}} (with an optional chained "if"/"with"). */
type Terminator = { kind: "eof" } | { kind: "end"; pos: number } | { kind: "else"; pos: number; chain: Control | null };

const KEYWORDS = new Set(["if", "else", "end", "range", "with", "break", "continue", "define", "template", "block"]);

class Parser {
  private readonly src: string;
  private readonly tokens: Token[];
  private i = 0;
  /** Variables in scope, innermost last. "$" (the root data) is always defined. */
  private readonly vars: string[] = ["$"];
  private rangeDepth = 0;

  constructor(src: string) {
    this.src = src;
    this.tokens = lex(src);
  }

  parse(): Node[] {
    const { nodes, term } = this.parseList();
    if (term.kind !== "eof") this.fail(term.pos, `unexpected {{${term.kind}}}`);
    return nodes;
  }

  private fail(pos: number, message: string): never {
    throw new TemplateError(this.src, pos, message);
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return t;
  }

  private expect(kind: Token["kind"], context: string): Token {
    const t = this.next();
    if (t.kind !== kind) this.fail(t.pos, `unexpected ${describe(t)} in ${context}`);
    return t;
  }

  private parseList(): { nodes: Node[]; term: Terminator } {
    const nodes: Node[] = [];
    for (;;) {
      const t = this.next();
      if (t.kind === "eof") return { nodes, term: { kind: "eof" } };
      if (t.kind === "text") {
        nodes.push({ type: "text", pos: t.pos, end: t.end, text: t.text });
        continue;
      }
      // t is a left delimiter.
      const result = this.parseAction(t);
      if ("kind" in result) return { nodes, term: result };
      nodes.push(result);
    }
  }

  private parseAction(open: Token): Node | Terminator {
    const t = this.peek();
    if (t.kind === "identifier" && KEYWORDS.has(t.text)) {
      this.next();
      switch (t.text) {
        case "end":
          this.expect("rightDelim", "end");
          return { kind: "end", pos: t.pos };
        case "else": {
          const chained = this.peek();
          if (chained.kind === "identifier" && (chained.text === "if" || chained.text === "with")) {
            // {{else if x}} is {{else}}{{if x}}...{{end}}{{end}} sharing the one {{end}}; the caller parses the "if".
            return { kind: "else", pos: t.pos, chain: chained.text };
          }
          this.expect("rightDelim", "else");
          return { kind: "else", pos: t.pos, chain: null };
        }
        case "if":
        case "range":
        case "with":
          return this.parseControl(t.text, open.pos);
        case "break":
        case "continue":
          if (this.rangeDepth === 0) this.fail(t.pos, `{{${t.text}}} outside {{range}}`);
          this.expect("rightDelim", t.text);
          return { type: t.text, pos: open.pos, end: t.end };
        default:
          this.fail(t.pos, `{{${t.text}}} is not supported in chat templates`);
      }
    }
    const pipe = this.parsePipeline("command", "rightDelim");
    return { type: "action", pos: open.pos, end: pipe.end, pipe };
  }

  private parseControl(kind: Control, pos: number): Node {
    const mark = this.vars.length;
    const pipe = this.parsePipeline(kind, "rightDelim");
    if (kind === "range") this.rangeDepth++;
    const body = this.parseList();
    if (kind === "range") this.rangeDepth--;
    let elseList: Node[] | null = null;
    let term = body.term;
    if (term.kind === "else") {
      if (term.chain !== null) {
        if (term.chain !== kind) this.fail(term.pos, `{{else ${term.chain}}} is not allowed inside {{${kind}}}`);
        const keyword = this.next();
        elseList = [this.parseControl(term.chain, keyword.pos)];
        term = { kind: "end", pos: keyword.pos };
      } else {
        const rest = this.parseList();
        elseList = rest.nodes;
        term = rest.term;
        if (term.kind === "else") this.fail(term.pos, `unexpected {{else}}: {{${kind}}} already has one`);
      }
    }
    if (term.kind === "eof") this.fail(pos, `unclosed {{${kind}}}: missing {{end}}`);
    this.vars.length = mark;
    const end = this.tokens[this.i - 1]!.end;
    return { type: kind, pos, end, pipe, list: body.nodes, elseList };
  }

  /** A pipeline up to `close` (right delimiter, or right paren for a parenthesized pipeline). */
  private parsePipeline(context: Control | "command" | "paren", close: "rightDelim" | "rightParen"): PipeNode {
    const start = this.peek().pos;
    const { decl, isAssign } = this.parseDeclarations(context);
    const cmds: CommandNode[] = [];
    for (;;) {
      const cmd = this.parseCommand(context);
      cmds.push(cmd);
      const t = this.next();
      if (t.kind === close) return { pos: start, end: cmd.end, decl, isAssign, cmds };
      if (t.kind !== "pipe") this.fail(t.pos, `unexpected ${describe(t)} in ${context}`);
    }
  }

  private parseDeclarations(context: string): { decl: string[]; isAssign: boolean } {
    const a = this.peek(),
      b = this.peek(1),
      c = this.peek(2),
      d = this.peek(3);
    let decl: string[] = [];
    let op: Token | null = null;
    if (a.kind === "variable" && (b.kind === "declare" || b.kind === "assign")) {
      decl = [a.text];
      op = b;
    } else if (
      a.kind === "variable" &&
      b.kind === "comma" &&
      c.kind === "variable" &&
      (d.kind === "declare" || d.kind === "assign")
    ) {
      if (context !== "range") this.fail(b.pos, `too many declarations in ${context}`);
      decl = [a.text, c.text];
      op = d;
    }
    if (op === null) return { decl, isAssign: false };
    this.i += decl.length === 1 ? 2 : 4;
    const isAssign = op.kind === "assign";
    for (const name of decl) {
      if (name === "$") this.fail(a.pos, "cannot declare or assign $");
      if (isAssign && !this.vars.includes(name)) this.fail(a.pos, `undefined variable "${name}"`);
      if (!isAssign) this.vars.push(name);
    }
    return { decl, isAssign };
  }

  private parseCommand(context: string): CommandNode {
    const args: ArgNode[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === "rightDelim" || t.kind === "rightParen" || t.kind === "pipe") break;
      args.push(this.parseOperand());
    }
    const t = this.peek();
    if (args.length === 0) this.fail(t.pos, `missing value for ${context}`);
    return { pos: args[0]!.pos, end: args[args.length - 1]!.end, args };
  }

  private parseOperand(): ArgNode {
    const node = this.parseTerm();
    // Fields written right after a term (no space) select from its value: $x.A, (index .M 0).Content.
    const path: string[] = [];
    let end = node.end;
    while (this.peek().kind === "field" && !this.peek().spaced) {
      const f = this.next();
      path.push(f.text);
      end = f.end;
    }
    if (path.length === 0) return node;
    switch (node.type) {
      case "field":
      case "variable":
        return { ...node, path: [...node.path, ...path], end };
      case "pipe":
        return { type: "chain", pos: node.pos, end, node, path };
      default:
        return this.fail(
          this.peek().pos,
          `unexpected . after term ${JSON.stringify(this.src.slice(node.pos, node.end))}`,
        );
    }
  }

  private parseTerm(): ArgNode {
    const t = this.next();
    const span = { pos: t.pos, end: t.end };
    switch (t.kind) {
      case "identifier":
        if (KEYWORDS.has(t.text)) this.fail(t.pos, `unexpected keyword "${t.text}" in command`);
        if (!BUILTIN_NAMES.has(t.text)) this.fail(t.pos, `function "${t.text}" not defined`);
        return { type: "identifier", ...span, name: t.text };
      case "field":
        return { type: "field", ...span, path: [t.text] };
      case "variable":
        if (!this.vars.includes(t.text)) this.fail(t.pos, `undefined variable "${t.text}"`);
        return { type: "variable", ...span, name: t.text, path: [] };
      case "dot":
        return { type: "dot", ...span };
      case "string":
        return { type: "string", ...span, value: t.text };
      case "number":
        return { type: "number", ...span, value: t.value as number };
      case "bool":
        return { type: "bool", ...span, value: t.value as boolean };
      case "nil":
        return { type: "nil", ...span };
      case "leftParen": {
        const pipe = this.parsePipeline("paren", "rightParen");
        const closeParen = this.tokens[this.i - 1]!;
        return { type: "pipe", pos: t.pos, end: closeParen.end, pipe };
      }
      default:
        return this.fail(t.pos, `unexpected ${describe(t)} in operand`);
    }
  }
}

function describe(t: Token): string {
  switch (t.kind) {
    case "eof":
      return "end of template";
    case "rightDelim":
      return '"}}"';
    case "text":
      return "text";
    default:
      return JSON.stringify(t.text);
  }
}

/** Parses a Go text/template source. The result is immutable and can be cached and rendered many times. */
export function parseTemplate(src: string): Template {
  return { source: src, root: new Parser(src).parse() };
}
