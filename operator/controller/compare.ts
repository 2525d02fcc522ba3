// Does a live object already hold everything the operator would apply? Then the apply is skipped: at steady state
// the operator sends no requests at all. Pure.
//
// Rendered objects only name the fields the operator owns; the API server adds defaults (protocol, dnsPolicy,
// terminationMessagePath…) and other managers may add more (a sidecar, an annotation). So the check is "desired ⊆
// live":
// objects recursively, lists of named items matched by name (uid for owner references), other lists exactly, and
// resource quantities by value ("1000m" equals "1").

import { sameQuantity } from "../render/quantity.ts";

/** List keys, in order of preference: owner references carry both, and uid is their identity. */
const KEYS = ["uid", "name"] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function listKey(items: readonly unknown[]): (typeof KEYS)[number] | undefined {
  return KEYS.find((k) => items.length > 0 && items.every((i) => isRecord(i) && typeof i[k] === "string"));
}

/** Paths whose leaves are resource quantities. */
const isQuantityPath = (path: readonly string[]): boolean =>
  path.includes("requests") || path.includes("limits") || path.includes("capacity");

export function covers(live: unknown, desired: unknown, path: readonly string[] = []): boolean {
  if (desired === undefined) return true;
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) return desired.length === 0 && live === undefined;
    const key = listKey(desired);
    if (key) {
      return desired.every((d) => {
        const match = live.find((l) => isRecord(l) && l[key] === (d as Record<string, unknown>)[key]);
        return match !== undefined && covers(match, d, [...path, String((d as Record<string, unknown>)[key])]);
      });
    }
    return live.length === desired.length && desired.every((d, i) => covers(live[i], d, [...path, String(i)]));
  }
  if (isRecord(desired)) {
    if (!isRecord(live)) return Object.keys(desired).length === 0 && live === undefined;
    return Object.entries(desired).every(([k, v]) => covers(live[k], v, [...path, k]));
  }
  if (
    isQuantityPath(path) &&
    (typeof desired === "string" || typeof desired === "number") &&
    (typeof live === "string" || typeof live === "number")
  ) {
    return sameQuantity(desired, live);
  }
  return live === desired;
}

/**
 * Whether applying `desired` would change nothing on `live`. apiVersion and kind are not compared: objects from a
 * list (an informer's first sync) carry neither.
 */
export function isApplied(live: unknown, desired: Record<string, unknown>): boolean {
  const { apiVersion: _apiVersion, kind: _kind, ...rest } = desired;
  return covers(live, rest);
}
