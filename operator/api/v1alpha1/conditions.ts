// ModelApp status conditions (metav1.Condition semantics). Pure: the clock is passed in.
import type { Condition } from "./modelapp.ts";

export const CONDITION = {
  /** The app can take requests: a replica is ready, or it is at zero with its model cached (a request wakes it). */
  Ready: "Ready",
  /** The model is in the app's model volume (pulled and verified). */
  ModelCached: "ModelCached",
  /** The app's pods are placed on nodes. */
  Scheduled: "Scheduled",
} as const;
export type ConditionType = (typeof CONDITION)[keyof typeof CONDITION];

export const REASON = {
  Serving: "Serving",
  ScaledToZero: "ScaledToZero",
  Starting: "Starting",
  Pulling: "Pulling",
  Cached: "Cached",
  Scheduled: "Scheduled",
  Pending: "Pending",
  NoReplicas: "NoReplicas",
  InvalidSpec: "InvalidSpec",
  InsufficientGPU: "InsufficientGPU",
  Unschedulable: "Unschedulable",
  ModelNotFound: "ModelNotFound",
  PullFailed: "PullFailed",
  ServerFailed: "ServerFailed",
  ResourceExists: "ResourceExists",
} as const;
export type Reason = (typeof REASON)[keyof typeof REASON];

export interface ConditionInput {
  type: ConditionType;
  status: "True" | "False" | "Unknown";
  reason: Reason;
  message: string;
}

/**
 * Sets a condition in a list (returns a new list, ordered by type). lastTransitionTime moves only when the status
 * changes, so rewriting an unchanged condition changes nothing.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  c: ConditionInput,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const at = list.findIndex((x) => x.type === c.type);
  const prev = at >= 0 ? list[at] : undefined;
  const next: Condition = {
    type: c.type,
    status: c.status,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    lastTransitionTime:
      prev && prev.status === c.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    reason: c.reason,
    message: c.message,
  };
  if (at >= 0) list[at] = next;
  else list.push(next);
  return list.sort((a, b) => a.type.localeCompare(b.type));
}

export const findCondition = (
  conditions: readonly Condition[] | undefined,
  type: ConditionType,
): Condition | undefined => conditions?.find((c) => c.type === type);

export const isConditionTrue = (conditions: readonly Condition[] | undefined, type: ConditionType): boolean =>
  findCondition(conditions, type)?.status === "True";
