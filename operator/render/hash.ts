// A stable short hash of a JSON value (object keys sorted), for the pod template's spec-hash annotation. Pure.
import crypto from "node:crypto";

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export const stableHash = (value: unknown): string =>
  crypto.createHash("sha256").update(canonicalJson(value)).digest("hex").slice(0, 16);
