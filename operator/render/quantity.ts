// Kubernetes resource quantities: rendering in the API server's canonical string form, and numeric comparison
// (the server rewrites "1000m" as "1" and "1024Mi" as "1Gi", so equal quantities may be spelled differently). Pure.
import type { Quantity } from "../api/v1alpha1/modelapp.ts";

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};
const FORM = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** The numeric value of a quantity, or undefined when the text is not one. */
export function quantityValue(q: Quantity | string): number | undefined {
  if (typeof q === "number") return q;
  const m = FORM.exec(q.trim());
  if (!m) return undefined;
  const n = Number(m[1]),
    suffix = m[2] ?? "";
  if (suffix in BINARY) return n * BINARY[suffix]!;
  if (suffix in DECIMAL) return n * DECIMAL[suffix]!;
  return n * 10 ** Number(suffix.slice(1));
}

/** A quantity as a string (integers written as numbers in a spec become their decimal text). */
export const quantityString = (q: Quantity): string => (typeof q === "number" ? String(q) : q);

/** Equal amounts, however spelled (relative tolerance for float rounding of decimal suffixes). */
export function sameQuantity(a: Quantity | string, b: Quantity | string): boolean {
  const x = quantityValue(a),
    y = quantityValue(b);
  if (x === undefined || y === undefined) return a === b;
  return x === y || Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
}
