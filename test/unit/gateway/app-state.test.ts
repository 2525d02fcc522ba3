import assert from "node:assert/strict";
import { test } from "node:test";
import { AppState, REMEMBERED_KEYS, type PrefixRoute } from "../../../server/gateway/3-route/app-state.ts";
import type { Endpoint } from "../../../server/gateway/ports.ts";

const ep = (id: string, ready: boolean): Endpoint => ({ id, origin: `http://${id}`, ready });

test("pick: the least-loaded ready pod; a not-ready one only after the gateway's own health check passed", () => {
  const s = new AppState("acme", "chat");
  const a = ep("10.0.0.1:11434", true),
    b = ep("10.0.0.2:11434", true),
    starting = ep("10.0.0.3:11434", false);
  s.load.set(a.id, 2);
  s.load.set(b.id, 1);
  assert.equal(s.pick([a, b, starting], 0)?.id, b.id);
  assert.equal(s.pick([starting], 0), undefined);
  s.probed.set(starting.id, 1000);
  assert.equal(s.pick([starting], 500)?.id, starting.id);
  assert.equal(s.pick([starting], 1500), undefined, "a passed check counts for a while only");
  s.failing.set(b.id, 1000);
  assert.equal(s.pick([b], 500), undefined, "a pod that refused is skipped for a while");
});

test("forget: a new pod at a gone pod's address inherits neither its passed health check nor its refusals", () => {
  const s = new AppState("acme", "chat");
  const old = ep("10.0.0.9:11434", false);
  s.probed.set(old.id, 10_000);
  s.failing.set("10.0.0.8:11434", 10_000);
  s.load.set(old.id, 0);
  s.forget([]);
  assert.equal(s.probed.size + s.failing.size + s.load.size, 0);
  assert.equal(s.pick([ep(old.id, false)], 0), undefined, "the new pod is not ready until checked");
  s.probed.set(old.id, 10_000);
  s.forget([old]);
  assert.equal(s.probed.get(old.id), 10_000, "a pod still listed keeps its state");
});

test("pick by PrefixHash: a key goes to its ring pod whatever the loads within the bound, and says how it was chosen", () => {
  const s = new AppState("acme", "chat");
  const pods = ["10.0.0.1:11434", "10.0.0.2:11434", "10.0.0.3:11434"].map((id) => ep(id, true));
  const settings = { meanLoadFactor: 125, replication: 64, prefixCharLength: 100 };
  const route = (key: string): PrefixRoute => ({ key, settings });
  const own = s.pick(pods, 0, undefined, route("conversation a"))!;
  for (let i = 0; i < 5; i++)
    assert.equal(s.pick([...pods].reverse(), 0, undefined, route("conversation a"))?.id, own.id);
  const r = route("conversation a");
  s.load.set(own.id, 1); // the bound: ceil((1 + 1) / 3 × 1.25) = 1 < 1 + 1, so passed on to an idle pod
  const next = s.pick(pods, 0, undefined, r)!;
  assert.notEqual(next.id, own.id);
  assert.equal(r.via, "next");
  s.load.set(own.id, 0);
  const kept = route("conversation a");
  assert.equal(s.pick(pods, 0, undefined, kept)?.id, next.id, "the pod that holds its latest turns");
  assert.equal(kept.via, "kept");
  s.load.set(next.id, 1); // that pod over the bound now: the key's own again
  const back = route("conversation a");
  assert.equal(s.pick(pods, 0, undefined, back)?.id, own.id);
  assert.equal(back.via, "first");
  s.load.set(next.id, 0);
  assert.equal(s.pick(pods, 0, undefined, route("conversation a"))?.id, own.id, "and stays there");
  assert.notEqual(s.pick(pods, 0, own.id, route("conversation a"))?.id, own.id, "avoid: the pod it just failed on");
  assert.equal(s.pick(pods, 0)?.id !== undefined, true, "without a route: the least loaded");
});

test("pick by PrefixHash: a key's last pod is forgotten when that pod is gone, and after REMEMBERED_KEYS other keys", () => {
  const s = new AppState("acme", "chat");
  const pods = ["10.0.0.1:11434", "10.0.0.2:11434", "10.0.0.3:11434"].map((id) => ep(id, true));
  const settings = { meanLoadFactor: 125, replication: 64, prefixCharLength: 100 };
  const route = (key: string): PrefixRoute => ({ key, settings });
  const own = s.pick(pods, 0, undefined, route("conversation b"))!;
  s.load.set(own.id, 1);
  const next = s.pick(pods, 0, undefined, route("conversation b"))!;
  s.load.set(own.id, 0);
  const rest = pods.filter((p) => p.id !== next.id);
  const r = route("conversation b");
  assert.equal(s.pick(rest, 0, undefined, r)?.id, own.id, "its last pod is not usable: the ring decides");
  assert.equal(r.via, "first");
  // Passed on again, then as many other keys as are remembered: the key's own pod again.
  s.load.set(own.id, 1);
  assert.notEqual(s.pick(pods, 0, undefined, route("conversation b"))?.id, own.id);
  s.load.set(own.id, 0);
  for (let i = 0; i < REMEMBERED_KEYS; i++) s.pick(pods, 0, undefined, route(`other ${i}`));
  const later = route("conversation b");
  assert.equal(s.pick(pods, 0, undefined, later)?.id, own.id);
  assert.equal(later.via, "first");
});

test("pick: a request's retry avoids the pod it failed on, unless that pod is the only usable one; ties rotate", () => {
  const s = new AppState("acme", "chat");
  const a = ep("10.0.0.1:11434", true),
    b = ep("10.0.0.2:11434", true);
  for (let i = 0; i < 4; i++) assert.equal(s.pick([a, b], 0, a.id)?.id, b.id);
  assert.equal(s.pick([a], 0, a.id)?.id, a.id, "no other pod: the same one again");
  const seen = new Set([0, 1, 2, 3].map(() => s.pick([a, b], 0)?.id));
  assert.deepEqual([...seen].sort(), [a.id, b.id], "equally loaded pods take turns");
});
