import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CONDITION,
  findCondition,
  isConditionTrue,
  REASON,
  setCondition,
  type ConditionInput,
} from "../../../../../operator/api/v1alpha1/conditions.ts";
import { ConditionSchema } from "../../../../../operator/api/v1alpha1/modelapp.ts";

const T0 = new Date("2026-01-01T00:00:00.000Z"),
  T1 = new Date("2026-01-01T00:05:00.250Z");
const ready = (
  status: ConditionInput["status"],
  reason: ConditionInput["reason"] = REASON.Serving,
  message = "1 of 1 replicas ready",
): ConditionInput => ({ type: CONDITION.Ready, status, reason, message });

test("a new condition gets the time now at second precision and the generation", () => {
  const [c, ...rest] = setCondition(undefined, ready("True"), 3, T1);
  assert.equal(rest.length, 0);
  assert.deepEqual(c, {
    type: "Ready",
    status: "True",
    observedGeneration: 3,
    lastTransitionTime: "2026-01-01T00:05:00Z",
    reason: "Serving",
    message: "1 of 1 replicas ready",
  });
  assert.ok(ConditionSchema.safeParse(c).success, "a valid metav1.Condition");
});

test("lastTransitionTime moves only when the status changes", () => {
  const first = setCondition([], ready("False", REASON.Starting, "waiting"), 1, T0);
  // rows: next condition → whether the time moves to T1
  const cases: [string, ConditionInput, boolean][] = [
    ["same status, same reason", ready("False", REASON.Starting, "waiting"), false],
    ["same status, new reason and message", ready("False", REASON.Pulling, "pulling m"), false],
    ["status False → True", ready("True"), true],
    ["status False → Unknown", ready("Unknown", REASON.Pending), true],
  ];
  for (const [name, next, moves] of cases) {
    const [c] = setCondition(first, next, 2, T1);
    assert.equal(c?.lastTransitionTime, moves ? "2026-01-01T00:05:00Z" : "2026-01-01T00:00:00Z", name);
    assert.equal(c?.reason, next.reason, name);
    assert.equal(c?.message, next.message, name);
    assert.equal(c?.observedGeneration, 2, name);
  }
});

test("rewriting an unchanged condition yields an equal list", () => {
  const list = setCondition(
    setCondition([], ready("True"), 1, T0),
    { type: CONDITION.Scheduled, status: "True", reason: REASON.Scheduled, message: "on n1" },
    1,
    T0,
  );
  const again = setCondition(list, ready("True"), 1, T1);
  assert.deepEqual(again, list);
});

test("the list is ordered by type and keeps one entry per type", () => {
  let list = setCondition(
    [],
    { type: CONDITION.Scheduled, status: "Unknown", reason: REASON.Pending, message: "" },
    1,
    T0,
  );
  list = setCondition(list, ready("False", REASON.Starting, "w"), 1, T0);
  list = setCondition(list, { type: CONDITION.ModelCached, status: "True", reason: REASON.Cached, message: "" }, 1, T0);
  list = setCondition(list, ready("True"), 1, T1);
  assert.deepEqual(
    list.map((c) => c.type),
    ["ModelCached", "Ready", "Scheduled"],
  );
});

test("setCondition does not modify the list it is given", () => {
  const list = setCondition([], ready("False", REASON.Starting, "w"), 1, T0);
  const copy = structuredClone(list);
  setCondition(list, ready("True"), 2, T1);
  setCondition(list, { type: CONDITION.ModelCached, status: "True", reason: REASON.Cached, message: "" }, 2, T1);
  assert.deepEqual(list, copy);
});

test("without a generation there is no observedGeneration", () => {
  const [c] = setCondition([], ready("True"), undefined, T0);
  assert.ok(c && !("observedGeneration" in c));
});

test("findCondition and isConditionTrue look a type up", () => {
  const list = setCondition([], ready("True"), 1, T0);
  assert.equal(findCondition(list, CONDITION.Ready)?.reason, "Serving");
  assert.equal(findCondition(list, CONDITION.ModelCached), undefined);
  assert.equal(findCondition(undefined, CONDITION.Ready), undefined);
  assert.equal(isConditionTrue(list, CONDITION.Ready), true);
  assert.equal(isConditionTrue(setCondition(list, ready("Unknown", REASON.Pending), 1, T1), CONDITION.Ready), false);
  assert.equal(isConditionTrue(undefined, CONDITION.Ready), false);
});

test("every reason is a valid metav1.Condition reason", () => {
  for (const reason of Object.values(REASON)) {
    assert.ok(
      ConditionSchema.safeParse({
        type: "Ready",
        status: "True",
        lastTransitionTime: "2026-01-01T00:00:00Z",
        reason,
        message: "",
      }).success,
      reason,
    );
  }
});
