// The functions chat templates may call: Go's text/template builtins plus Ollama's `json`.
// `and`/`or` are listed here for name checks but evaluated lazily by the renderer (they short-circuit in Go).
import { sprintf } from "./printf.ts";
import { EvalError, formatValue, isMapLike, isTruthy, kindOf, utf8 } from "./values.ts";

export type Builtin = (args: unknown[]) => unknown;

const isNil = (v: unknown) => v === null || v === undefined;

function arity(name: string, args: unknown[], min: number, max = min): void {
  if (args.length < min || args.length > max) {
    const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
    throw new EvalError(`wrong number of args for ${name}: want ${want} got ${args.length}`);
  }
}

function isBasic(v: unknown): v is string | number | boolean {
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean";
}

/** Go's eq on two values. Nil compares equal only to nil (Ollama data has absent fields where Go had zero values). */
function equal(a: unknown, b: unknown): boolean {
  if (isNil(a) || isNil(b)) return isNil(a) && isNil(b);
  if (!isBasic(a) || !isBasic(b)) throw new EvalError(`non-comparable type ${kindOf(isBasic(a) ? b : a)}`);
  if (typeof a !== typeof b) throw new EvalError(`incompatible types for comparison: ${kindOf(a)} and ${kindOf(b)}`);
  return a === b;
}

function less(a: unknown, b: unknown): boolean {
  const ok = (typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string");
  if (!ok) {
    if (isBasic(a) && isBasic(b) && typeof a !== "boolean" && typeof b !== "boolean") {
      throw new EvalError(`incompatible types for comparison: ${kindOf(a)} and ${kindOf(b)}`);
    }
    throw new EvalError(
      `invalid type for comparison: ${kindOf(typeof a === "number" || typeof a === "string" ? b : a)}`,
    );
  }
  return (a as number | string) < (b as number | string);
}

function toIndex(v: unknown): number {
  if (typeof v !== "number" || !Number.isInteger(v))
    throw new EvalError(`cannot index slice/array with type ${kindOf(v)}`);
  return v;
}

function indexOne(item: unknown, key: unknown): unknown {
  if (isNil(item)) throw new EvalError("index of untyped nil");
  if (Array.isArray(item) || typeof item === "string") {
    const i = toIndex(key);
    const seq = typeof item === "string" ? utf8(item) : item;
    if (i < 0 || i >= seq.length) throw new EvalError(`index out of range: ${i}`);
    return seq[i];
  }
  if (item instanceof Map) return item.get(key);
  if (isMapLike(item)) {
    if (typeof key !== "string") throw new EvalError(`value has type ${kindOf(key)}; should be string`);
    return Object.hasOwn(item, key) ? item[key] : undefined;
  }
  throw new EvalError(`can't index item of type ${kindOf(item)}`);
}

function sliceOf(item: unknown, bounds: unknown[]): unknown {
  if (!Array.isArray(item) && typeof item !== "string") throw new EvalError(`can't slice item of type ${kindOf(item)}`);
  if (typeof item === "string" && bounds.length > 2) throw new EvalError("cannot 3-index slice a string");
  const length = typeof item === "string" ? utf8(item).length : item.length;
  const [lo = 0, hi = length, cap = length] = bounds.map(toIndex);
  if (lo < 0 || hi < lo || cap < hi || cap > length) throw new EvalError(`index out of range: ${lo}:${hi}`);
  if (typeof item === "string") return new TextDecoder().decode(utf8(item).slice(lo, hi));
  return item.slice(lo, hi);
}

function lengthOf(v: unknown): number {
  if (isNil(v)) return 0; // an absent list or map is empty, like a nil slice in Go
  if (typeof v === "string") return utf8(v).length;
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  if (isMapLike(v)) return Object.keys(v).length;
  throw new EvalError(`len of type ${kindOf(v)}`);
}

/** Go's json.Marshal: like JSON.stringify, but escapes <, >, & and line separators for HTML safety. */
export function goJson(v: unknown): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(v ?? null);
  } catch (e) {
    throw new EvalError(`json: ${(e as Error).message}`);
  }
  return (s ?? "null").replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Go's fmt.Sprint: a space between operands when neither side is a string. */
function sprint(args: unknown[]): string {
  let out = "";
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== "string" && typeof args[i - 1] !== "string") out += " ";
    out += formatValue(a);
  });
  return out;
}

export const BUILTINS: Record<string, Builtin> = {
  not: (args) => (arity("not", args, 1), !isTruthy(args[0])),
  eq: (args) => {
    if (args.length < 2) throw new EvalError("missing argument for comparison");
    return args.slice(1).some((b) => equal(args[0], b));
  },
  ne: (args) => (arity("ne", args, 2), !equal(args[0], args[1])),
  lt: (args) => (arity("lt", args, 2), less(args[0], args[1])),
  le: (args) => (arity("le", args, 2), less(args[0], args[1]) || equal(args[0], args[1])),
  gt: (args) => (arity("gt", args, 2), !less(args[0], args[1]) && !equal(args[0], args[1])),
  ge: (args) => (arity("ge", args, 2), !less(args[0], args[1])),
  len: (args) => (arity("len", args, 1), lengthOf(args[0])),
  index: (args) => {
    arity("index", args, 1, Infinity);
    return args.slice(1).reduce((item, key) => indexOne(item, key), args[0]);
  },
  slice: (args) => (arity("slice", args, 1, 4), sliceOf(args[0], args.slice(1))),
  json: (args) => (arity("json", args, 1), goJson(args[0])),
  print: (args) => sprint(args),
  println: (args) => `${args.map(formatValue).join(" ")}\n`,
  printf: (args) => {
    arity("printf", args, 1, Infinity);
    if (typeof args[0] !== "string") throw new EvalError(`printf format must be a string, got ${kindOf(args[0])}`);
    return sprintf(args[0], args.slice(1));
  },
};

export const LAZY_BUILTINS: ReadonlySet<string> = new Set(["and", "or"]);

export const BUILTIN_NAMES: ReadonlySet<string> = new Set([...Object.keys(BUILTINS), ...LAZY_BUILTINS]);
