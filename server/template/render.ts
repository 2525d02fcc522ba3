// Executes a parsed template against data, with Go text/template semantics (dot, variables scoped to their
// control structure, range/else, with, break/continue). Missing fields render as "" (Ollama relies on that).
import type { ArgNode, CommandNode, Node, PipeNode, Template } from "./ast.ts";
import { TemplateError } from "./errors.ts";
import { BUILTINS } from "./functions.ts";
import { parseTemplate } from "./parser.ts";
import { EvalError, formatValue, getField, isMapLike, isTruthy, kindOf } from "./values.ts";

/** Thrown to unwind out of a range iteration. */
class LoopSignal {
  readonly kind: "break" | "continue";
  constructor(kind: "break" | "continue") {
    this.kind = kind;
  }
}

/**
 * Templates arrive from users (Modelfile TEMPLATE, the `template` request field), so execution is bounded:
 * `{{ range 1000000000 }}` or nested ranges must fail fast instead of stalling the server. Real chat templates
 * stay orders of magnitude below both limits.
 */
export const RENDER_LIMITS = { maxSteps: 1_000_000, maxOutputChars: 16 * 1024 * 1024 } as const;

/** Marks "no value piped in", distinct from a piped undefined. */
const NO_FINAL: unique symbol = Symbol("no final value");

class Executor {
  private readonly tpl: Template;
  private readonly vars: { name: string; value: unknown }[];
  private out = "";
  private steps = 0;

  constructor(tpl: Template, data: unknown) {
    this.tpl = tpl;
    this.vars = [{ name: "$", value: data }];
  }

  run(): string {
    this.walk(this.vars[0]!.value, this.tpl.root);
    return this.out;
  }

  private fail(at: { pos: number; end: number }, message: string): never {
    const expr = this.tpl.source.slice(at.pos, at.end);
    throw new TemplateError(this.tpl.source, at.pos, `executing <${expr}>: ${message}`);
  }

  /** Runs `fn`, turning evaluation failures into positioned TemplateErrors. */
  private at<T>(node: { pos: number; end: number }, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof EvalError) this.fail(node, e.message);
      throw e;
    }
  }

  private write(node: Node, text: string): void {
    this.out += text;
    if (this.out.length > RENDER_LIMITS.maxOutputChars) {
      this.fail(node, `output exceeds ${RENDER_LIMITS.maxOutputChars} characters`);
    }
  }

  private walk(dot: unknown, nodes: readonly Node[]): void {
    for (const node of nodes) {
      if (++this.steps > RENDER_LIMITS.maxSteps) this.fail(node, `execution exceeds ${RENDER_LIMITS.maxSteps} steps`);
      switch (node.type) {
        case "text":
          this.write(node, node.text);
          break;
        case "action": {
          const value = this.evalPipeline(dot, node.pipe);
          // Declarations print nothing; absent values print nothing (not Go's "<no value>").
          if (node.pipe.decl.length === 0 && value !== undefined && value !== null)
            this.write(node, formatValue(value));
          break;
        }
        case "if":
        case "with":
          this.walkIfOrWith(dot, node);
          break;
        case "range":
          this.walkRange(dot, node);
          break;
        case "break":
        case "continue":
          throw new LoopSignal(node.type);
      }
    }
  }

  private walkIfOrWith(dot: unknown, node: Extract<Node, { type: "if" | "with" }>): void {
    const mark = this.vars.length;
    const value = this.evalPipeline(dot, node.pipe);
    if (isTruthy(value)) this.walk(node.type === "with" ? value : dot, node.list);
    else if (node.elseList) this.walk(dot, node.elseList);
    this.vars.length = mark;
  }

  private walkRange(dot: unknown, node: Extract<Node, { type: "range" }>): void {
    const mark = this.vars.length;
    const value = this.evalCommands(dot, node.pipe);
    const { decl } = node.pipe;
    if (!node.pipe.isAssign) for (const name of decl) this.vars.push({ name, value: undefined });
    const entries = this.at(node.pipe, () => rangeEntries(value, decl.length));
    const bodyMark = this.vars.length;
    let iterations = 0;
    for (const [key, elem] of entries) {
      iterations++;
      if (++this.steps > RENDER_LIMITS.maxSteps) this.fail(node, `execution exceeds ${RENDER_LIMITS.maxSteps} steps`);
      // One variable gets the element; two get key/index then element.
      if (decl.length === 1) this.setVar(decl[0]!, elem, node);
      if (decl.length === 2) {
        this.setVar(decl[0]!, key, node);
        this.setVar(decl[1]!, elem, node);
      }
      try {
        this.walk(elem, node.list);
      } catch (e) {
        if (!(e instanceof LoopSignal)) throw e;
        if (e.kind === "break") break;
      } finally {
        this.vars.length = bodyMark;
      }
    }
    if (iterations === 0 && node.elseList) this.walk(dot, node.elseList);
    this.vars.length = mark;
  }

  private setVar(name: string, value: unknown, node: { pos: number; end: number }): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    this.fail(node, `undefined variable: ${name}`);
  }

  private lookupVar(name: string, node: { pos: number; end: number }): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i]!.name === name) return this.vars[i]!.value;
    return this.fail(node, `undefined variable: ${name}`);
  }

  /** Runs the commands of a pipeline, each one's result piped in as the last argument of the next. */
  private evalCommands(dot: unknown, pipe: PipeNode): unknown {
    let value: unknown = NO_FINAL;
    for (const cmd of pipe.cmds) value = this.evalCommand(dot, cmd, value);
    return value;
  }

  private evalPipeline(dot: unknown, pipe: PipeNode): unknown {
    const value = this.evalCommands(dot, pipe);
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.setVar(name, value, pipe);
      else this.vars.push({ name, value });
    }
    return value;
  }

  private evalCommand(dot: unknown, cmd: CommandNode, final: unknown): unknown {
    const [first, ...rest] = cmd.args as [ArgNode, ...ArgNode[]];
    if (first.type === "identifier") return this.callFunction(dot, first, rest, final);
    if (rest.length > 0 || final !== NO_FINAL) {
      this.fail(first, `can't give argument to non-function ${this.tpl.source.slice(first.pos, first.end)}`);
    }
    if (first.type === "nil") this.fail(first, "nil is not a command");
    return this.evalArg(dot, first);
  }

  private callFunction(
    dot: unknown,
    fn: Extract<ArgNode, { type: "identifier" }>,
    argNodes: ArgNode[],
    final: unknown,
  ): unknown {
    const node = { pos: fn.pos, end: argNodes.at(-1)?.end ?? fn.end };
    // and/or evaluate arguments left to right and stop at the first that decides the result, returning that value.
    if (fn.name === "and" || fn.name === "or") {
      const thunks: (() => unknown)[] = argNodes.map((a) => () => this.evalArg(dot, a));
      if (final !== NO_FINAL) thunks.push(() => final);
      if (thunks.length === 0) this.fail(node, `wrong number of args for ${fn.name}: want at least 1 got 0`);
      let value: unknown;
      for (const thunk of thunks) {
        value = thunk();
        if (isTruthy(value) === (fn.name === "or")) return value;
      }
      return value;
    }
    const args = argNodes.map((a) => this.evalArg(dot, a));
    if (final !== NO_FINAL) args.push(final);
    const builtin = BUILTINS[fn.name]!;
    try {
      return builtin(args);
    } catch (e) {
      if (e instanceof EvalError) this.fail(node, `error calling ${fn.name}: ${e.message}`);
      throw e;
    }
  }

  private evalArg(dot: unknown, arg: ArgNode): unknown {
    switch (arg.type) {
      case "dot":
        return dot;
      case "nil":
        return null;
      case "string":
      case "number":
      case "bool":
        return arg.value;
      case "field":
        return this.at(arg, () => fieldPath(dot, arg.path));
      case "variable": {
        const base = this.lookupVar(arg.name, arg);
        return this.at(arg, () => fieldPath(base, arg.path));
      }
      case "pipe":
        return this.evalPipeline(dot, arg.pipe);
      case "chain": {
        const base = this.evalArg(dot, arg.node);
        return this.at(arg, () => fieldPath(base, arg.path));
      }
      case "identifier":
        return this.callFunction(dot, arg, [], NO_FINAL);
    }
  }
}

function fieldPath(value: unknown, path: readonly string[]): unknown {
  return path.reduce(getField, value);
}

function* countTo(n: number): Generator<[number, number]> {
  for (let i = 0; i < n; i++) yield [i, i];
}

/** [key, element] pairs of a range: slices by index, maps by sorted key (as Go does), integers 0..n-1 (lazily). */
function rangeEntries(value: unknown, declCount: number): Iterable<[unknown, unknown]> {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.map((v, i) => [i, v]);
  if (value instanceof Map) return [...value.entries()].sort(([a], [b]) => (String(a) < String(b) ? -1 : 1));
  if (isMapLike(value))
    return Object.keys(value)
      .sort()
      .map((k) => [k, value[k]]);
  if (typeof value === "number" && Number.isInteger(value)) {
    if (declCount > 1) throw new EvalError("can't use two variables to range over an integer");
    return countTo(value);
  }
  throw new EvalError(`range can't iterate over ${kindOf(value)} ${formatValue(value)}`);
}

/** Renders a parsed template (see parseTemplate) with `data` as dot and `$`. */
export function executeTemplate(tpl: Template, data: unknown): string {
  return new Executor(tpl, data).run();
}

/** Parses and renders in one step; prefer parseTemplate + executeTemplate when a template is rendered often. */
export function renderTemplate(src: string, data: unknown): string {
  return executeTemplate(parseTemplate(src), data);
}
