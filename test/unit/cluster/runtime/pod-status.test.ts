import assert from "node:assert/strict";
import { test } from "node:test";
import type { Condition, PodRecord } from "../../../../test/cluster/runtime/pod-status.ts";
import { apiTime, podStatus } from "../../../../test/cluster/runtime/pod-status.ts";

const T0 = "2026-01-01T00:00:00Z",
  T1 = "2026-01-01T00:01:00Z";
const record = (ready: boolean): PodRecord => ({
  phase: "Running",
  hostIp: "127.0.0.1",
  podIp: "10.244.128.2",
  startTime: T0,
  initialized: true,
  init: [],
  containers: [
    {
      name: "main",
      image: "img",
      state: { kind: "running", startedAt: T0 },
      restartCount: 2,
      ready,
      started: true,
      lastState: { kind: "terminated", exitCode: 137, reason: "Error", startedAt: T0, finishedAt: T0 },
    },
  ],
});
const condition = (s: Record<string, unknown>, type: string): Condition | undefined =>
  (s.conditions as Condition[]).find((c) => c.type === type);

test("status carries IPs, phase and container states as a kubelet writes them", () => {
  const s = podStatus(record(true), [], T0);
  assert.equal(s.podIP, "10.244.128.2");
  assert.deepEqual(s.podIPs, [{ ip: "10.244.128.2" }]);
  assert.equal(s.phase, "Running");
  const [c] = s.containerStatuses as Record<string, unknown>[];
  assert.equal(c?.restartCount, 2);
  assert.deepEqual(c?.state, { running: { startedAt: T0 } });
  assert.deepEqual((c?.lastState as { terminated: { exitCode: number } }).terminated.exitCode, 137);
  assert.equal(condition(s, "Ready")?.status, "True");
});

test("Ready follows the containers and keeps its transition time while unchanged", () => {
  const first = podStatus(record(false), [], T0);
  assert.equal(condition(first, "Ready")?.status, "False");
  assert.equal(condition(first, "Ready")?.reason, "ContainersNotReady");
  const same = podStatus(record(false), first.conditions as Condition[], T1);
  assert.equal(condition(same, "Ready")?.lastTransitionTime, T0);
  const flipped = podStatus(record(true), first.conditions as Condition[], T1);
  assert.equal(condition(flipped, "Ready")?.lastTransitionTime, T1);
  assert.equal(condition(flipped, "Initialized")?.lastTransitionTime, T0);
});

test("API times have second precision", () => {
  assert.equal(apiTime(new Date("2026-01-01T00:00:00.789Z")), "2026-01-01T00:00:00Z");
});
