import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decideReplicas,
  LoadReports,
  LoadReportSchema,
  scaleDownDelayMs,
  type ScaleInput,
} from "../../../../operator/controller/autoscaler.ts";

const MIN = 60_000;
const input = (i: Partial<ScaleInput>): ScaleInput => ({
  inFlight: 0,
  target: 4,
  min: 0,
  max: 10,
  current: 1,
  history: [],
  now: 0,
  scaleDownDelayMs: 5 * MIN,
  ...i,
});

/**
 * Runs decisions at the given times with the given loads, carrying replicas and history forward like the controller.
 */
function run(start: number, steps: [at: number, inFlight: number][], base: Partial<ScaleInput> = {}): number[] {
  let current = start,
    history: ScaleInput["history"] = [];
  const out: number[] = [];
  for (const [now, inFlight] of steps) {
    const r = decideReplicas(input({ ...base, current, history, now, inFlight }));
    current = r.replicas;
    history = r.history;
    out.push(r.replicas);
  }
  return out;
}

test("scale up at once to ceil(inFlight / target), clamped to max", () => {
  // [inFlight, target, max, current] → replicas
  const cases: [number, number, number, number, number][] = [
    [5, 4, 10, 1, 2],
    [8, 4, 10, 1, 2],
    [9, 4, 10, 1, 3],
    [100, 4, 10, 1, 10],
    [1, 1, 10, 0, 1],
    [3, 0, 10, 0, 3],
  ];
  for (const [inFlight, target, max, current, want] of cases) {
    assert.equal(
      decideReplicas(input({ inFlight, target, max, current })).replicas,
      want,
      `inFlight ${inFlight} target ${target} max ${max}`,
    );
  }
});

test("a request held at zero replicas wakes the app", () => {
  assert.equal(decideReplicas(input({ current: 0, inFlight: 1 })).replicas, 1);
  assert.equal(decideReplicas(input({ current: 0, inFlight: 0 })).replicas, 0);
});

test("minReplicas is respected however low the load", () => {
  assert.equal(decideReplicas(input({ current: 2, min: 2, inFlight: 0, scaleDownDelayMs: 0 })).replicas, 2);
  assert.deepEqual(
    run(
      3,
      [
        [0, 0],
        [6 * MIN, 0],
      ],
      { min: 2 },
    ),
    [3, 2],
  );
});

test("the first decision without history does not scale down", () => {
  const r = decideReplicas(input({ current: 3, inFlight: 0, now: 1_000_000 }));
  assert.equal(r.replicas, 3);
  assert.ok(r.history.length > 0, "the decision is remembered");
});

test("scale down only after the load stayed lower for scaleDownDelay", () => {
  // At 5 minutes of delay, idle from t=0: 3 replicas stay until the window has passed.
  const replicas = run(3, [
    [0, 0],
    [1 * MIN, 0],
    [3 * MIN, 0],
    [4.9 * MIN, 0],
    [5 * MIN + 1, 0],
  ]);
  assert.deepEqual(replicas.slice(0, 4), [3, 3, 3, 3]);
  assert.equal(replicas[4], 0);
});

test("scale down goes to the highest want still within the window", () => {
  // 12 in flight (3 replicas at target 4) at 0, 6 (2 replicas) at 1m, idle from 2m on.
  const replicas = run(1, [
    [0, 12],
    [1 * MIN, 6],
    [2 * MIN, 0],
    [5.5 * MIN, 0],
    [6.5 * MIN, 0],
  ]);
  assert.equal(replicas[0], 3, "up at once");
  assert.deepEqual(replicas.slice(1, 3), [3, 3], "down waits");
  assert.equal(replicas[3], 2, "the 12 left the window, the 6 at 1m is still in it");
  assert.equal(replicas[4], 0, "everything in the window wants 0");
});

test("a burst inside the window restarts the wait", () => {
  const replicas = run(2, [
    [0, 0],
    [4 * MIN, 8],
    [6 * MIN, 0],
    [8 * MIN, 0],
    [9.5 * MIN, 0],
  ]);
  assert.deepEqual(replicas, [2, 2, 2, 2, 0]);
});

test("scaleDownDelay 0 scales down at once", () => {
  assert.equal(decideReplicas(input({ current: 5, inFlight: 4, scaleDownDelayMs: 0 })).replicas, 1);
  assert.deepEqual(
    run(
      4,
      [
        [0, 0],
        [1, 0],
      ],
      { scaleDownDelayMs: 0 },
    ),
    [0, 0],
  );
});

test("a forever scaleDownDelay never scales down but still scales up", () => {
  assert.deepEqual(
    run(
      2,
      [
        [0, 0],
        [60 * MIN, 0],
        [24 * 60 * MIN, 0],
        [24 * 60 * MIN + 1, 20],
      ],
      { scaleDownDelayMs: Number.POSITIVE_INFINITY },
    ),
    [2, 2, 2, 5],
  );
});

test("the history keeps only the wants within the window", () => {
  let history: ScaleInput["history"] = [];
  for (let i = 0; i <= 20; i++)
    history = decideReplicas(input({ current: 1, inFlight: 4, now: i * MIN, history })).history;
  assert.ok(
    history.every((h) => 20 * MIN - h.at < 5 * MIN),
    JSON.stringify(history),
  );
  assert.ok(history.length <= 6, `${history.length} entries`);
  assert.deepEqual(history.at(-1), { at: 20 * MIN, want: 1 });
});

test("the history does not grow without bound when scaleDownDelay is forever", () => {
  // The controller keeps the returned history per app and decides every few seconds (and on every busy report):
  // an ever-growing history costs memory and time, and Math.max(...history) eventually throws a RangeError.
  let history: ScaleInput["history"] = [];
  const lengthAfter = (n: number) => {
    for (let i = 0; i < n; i++)
      history = decideReplicas(
        input({
          current: 2,
          inFlight: 0,
          now: history.length * 5000,
          history,
          scaleDownDelayMs: Number.POSITIVE_INFINITY,
        }),
      ).history;
    return history.length;
  };
  const first = lengthAfter(1000),
    second = lengthAfter(1000);
  assert.ok(second <= first, `history grew from ${first} to ${second} entries`);
});

test("scaleDownDelayMs parses durations; negative or unparsable means never", () => {
  const cases: [string, number][] = [
    ["5m", 300_000],
    ["30s", 30_000],
    ["1h30m", 5_400_000],
    ["0", 0],
    ["90", 90_000],
    ["250ms", 250],
    ["-1", Number.POSITIVE_INFINITY],
    ["-5m", Number.POSITIVE_INFINITY],
    ["soon", Number.POSITIVE_INFINITY],
  ];
  for (const [value, want] of cases) assert.equal(scaleDownDelayMs(value), want, value);
});

test("LoadReports sums an app's in-flight requests over the gateways", () => {
  const loads = new LoadReports(30_000);
  loads.record(
    {
      gateway: "g1",
      apps: [
        { namespace: "acme", name: "chat", inFlight: 3 },
        { namespace: "acme", name: "other", inFlight: 1 },
      ],
    },
    0,
  );
  loads.record({ gateway: "g2", apps: [{ namespace: "acme", name: "chat", inFlight: 4 }] }, 1000);
  assert.equal(loads.inFlight("acme/chat", 2000), 7);
  assert.equal(loads.inFlight("acme/other", 2000), 1);
  assert.equal(loads.inFlight("acme/unknown", 2000), 0);
  assert.equal(loads.inFlight("other/chat", 2000), 0, "namespaces are distinct orgs");
});

test("a gateway's newer snapshot replaces its older one; missing apps count 0", () => {
  const loads = new LoadReports(30_000);
  loads.record(
    {
      gateway: "g1",
      apps: [
        { namespace: "acme", name: "chat", inFlight: 9 },
        { namespace: "acme", name: "b", inFlight: 2 },
      ],
    },
    0,
  );
  loads.record({ gateway: "g1", apps: [{ namespace: "acme", name: "chat", inFlight: 1 }] }, 1000);
  assert.equal(loads.inFlight("acme/chat", 1000), 1);
  assert.equal(loads.inFlight("acme/b", 1000), 0);
});

test("stale snapshots (older than the TTL) are ignored", () => {
  const loads = new LoadReports(30_000);
  loads.record({ gateway: "old", apps: [{ namespace: "acme", name: "chat", inFlight: 5 }] }, 0);
  loads.record({ gateway: "fresh", apps: [{ namespace: "acme", name: "chat", inFlight: 2 }] }, 20_000);
  assert.equal(loads.inFlight("acme/chat", 30_000), 7, "at the TTL a snapshot still counts");
  assert.equal(loads.inFlight("acme/chat", 45_000), 2);
  assert.equal(loads.inFlight("acme/chat", 60_000), 0);
});

test("record() returns the keys of the apps the snapshot reports busy", () => {
  const loads = new LoadReports(30_000);
  const busy = loads.record(
    {
      gateway: "g",
      apps: [
        { namespace: "acme", name: "chat", inFlight: 2 },
        { namespace: "acme", name: "idle", inFlight: 0 },
        { namespace: "beta", name: "x", inFlight: 1 },
      ],
    },
    0,
  );
  assert.deepEqual(busy.sort(), ["acme/chat", "beta/x"]);
  assert.deepEqual(loads.record({ gateway: "g", apps: [] }, 1), []);
});

test("LoadReportSchema rejects malformed reports", () => {
  assert.ok(LoadReportSchema.safeParse({ gateway: "g", apps: [{ namespace: "a", name: "b", inFlight: 0 }] }).success);
  for (const bad of [
    { apps: [] },
    { gateway: "", apps: [] },
    { gateway: "g", apps: [{ namespace: "a", name: "b", inFlight: -1 }] },
    { gateway: "g", apps: [{ namespace: "a", name: "b", inFlight: 1.5 }] },
    { gateway: "g", apps: [{ namespace: "a", inFlight: 1 }] },
  ])
    assert.ok(!LoadReportSchema.safeParse(bad).success, JSON.stringify(bad));
});
