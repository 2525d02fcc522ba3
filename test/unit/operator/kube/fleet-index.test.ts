// The indexes a reconcile reads instead of scanning the namespace: they follow adds, updates that move an object to
// another group (a label or a spec changed) and deletes, relists included.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { APP_LABEL } from "../../../../operator/api/v1alpha1/labels.ts";
import { FleetIndex } from "../../../../operator/kube/fleet-index.ts";
import { modelApp } from "../fixtures.ts";

const pod = (name: string, app: string): V1Pod => ({
  metadata: { name, namespace: "acme", labels: { [APP_LABEL]: app } },
});
const names = (objs: Array<{ metadata?: { name?: string } }>) => objs.map((o) => o.metadata?.name).sort();

test("pods are grouped by their app, move when relabelled and leave when deleted", () => {
  const index = new FleetIndex();
  index.observe("pods", pod("a-1", "a"), "add");
  index.observe("pods", pod("a-2", "a"), "add");
  index.observe("pods", pod("b-1", "b"), "add");
  assert.deepEqual(names(index.podsOf("acme", "a")), ["a-1", "a-2"]);
  index.observe("pods", pod("a-2", "b"), "update");
  assert.deepEqual([names(index.podsOf("acme", "a")), names(index.podsOf("acme", "b"))], [["a-1"], ["a-2", "b-1"]]);
  index.observe("pods", pod("a-1", "a"), "delete");
  assert.deepEqual(index.podsOf("acme", "a"), []);
  assert.deepEqual(index.podsOf("other", "b"), [], "namespaces apart");
});

test("apps are grouped by the volume their spec names; an app whose spec does not parse is in none", () => {
  const index = new FleetIndex();
  const one = modelApp({ modelVolume: { name: "shared" } }, { name: "one", uid: "u1" });
  const two = modelApp({ modelVolume: { name: "shared" } }, { name: "two", uid: "u2" });
  index.observe("apps", one, "add");
  index.observe("apps", two, "add");
  assert.deepEqual(names(index.volumeUsers("acme", "shared")), ["one", "two"]);
  index.observe("apps", modelApp({ modelVolume: { name: "own" } }, { name: "two", uid: "u2" }), "update");
  assert.deepEqual(
    [names(index.volumeUsers("acme", "shared")), names(index.volumeUsers("acme", "own"))],
    [["one"], ["two"]],
  );
  index.observe("apps", modelApp({ model: 42 } as never, { name: "one", uid: "u1" }), "update");
  assert.deepEqual(index.volumeUsers("acme", "shared"), []);
});

test("a Job is found by its controller's uid; an app's spec is parsed once per object", () => {
  const index = new FleetIndex();
  const job: V1Job = {
    metadata: {
      name: "j",
      namespace: "acme",
      ownerReferences: [
        { apiVersion: "gantry.dev/v1alpha1", kind: "ModelApp", name: "chat", uid: "u1", controller: true },
      ],
    },
  };
  index.observe("jobs", job, "add");
  assert.deepEqual(names(index.jobsOf("u1")), ["j"]);
  assert.deepEqual(index.jobsOf("u2"), [], "a new app of the same name has another uid");
  const app = modelApp();
  assert.equal(index.spec(app), index.spec(app));
  assert.notEqual(index.spec(app), index.spec({ ...app }), "an update is a new object, parsed again");
});
