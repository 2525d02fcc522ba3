// How template data (plain JS values from JSON-like objects) behave as Go values: truth, printing, field lookup.

/** A failure inside a function or lookup; the renderer adds the template position. */
export class EvalError extends Error {}

/** Go's kind names, used in error messages. */
export function kindOf(v: unknown): string {
  if (v === null || v === undefined) return "nil";
  if (Array.isArray(v)) return "slice";
  switch (typeof v) {
    case "string":
      return "string";
    case "number":
      return Number.isInteger(v) ? "int" : "float64";
    case "boolean":
      return "bool";
    case "object":
      return "map";
    default:
      return typeof v;
  }
}

export const isMapLike = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Map);

/** Go truth: false, 0, "", nil and empty slices/maps are false; everything else is true. */
export function isTruthy(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === "boolean") return v;
  if (typeof v === "number") return v !== 0;
  if (typeof v === "string") return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Map) return v.size > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true;
}

/** Go's fmt %v formatting: slices as [a b], maps as map[k:v] with sorted keys, nil as <nil>. */
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "string") return v;
  if (typeof v === "number") return formatNumber(v);
  if (Array.isArray(v)) return `[${v.map(formatValue).join(" ")}]`;
  const entries = v instanceof Map ? [...v.entries()] : typeof v === "object" ? Object.entries(v) : null;
  if (entries) {
    const sorted = entries.map(([k, x]) => [String(k), x] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[${sorted.map(([k, x]) => `${k}:${formatValue(x)}`).join(" ")}]`;
  }
  return String(v);
}

/** Numbers print like Go's %v: integers plainly, floats in shortest form with Go's exponent style (1e+21). */
export function formatNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "+Inf" : "-Inf";
  const s = String(n);
  // Go's %v switches floats to exponent form from 1e21 and below 1e-4, with a two-digit exponent.
  return s.replace(/e([+-])(\d)$/, "e$10$2");
}

/**
 * `.Name` on a value. Missing keys and lookups through nil give undefined (rendered as ""), like Ollama's zero values.
 */
export function getField(receiver: unknown, name: string): unknown {
  if (receiver === null || receiver === undefined) return undefined;
  if (receiver instanceof Map) return receiver.get(name);
  if (isMapLike(receiver)) return Object.hasOwn(receiver, name) ? receiver[name] : undefined;
  throw new EvalError(`can't evaluate field ${name} in type ${kindOf(receiver)}`);
}

/** UTF-8 bytes of a string: Go's len, index and slice count bytes, not characters. */
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
