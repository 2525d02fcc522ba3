import assert from "node:assert/strict";
import { test } from "node:test";
import { renderApp } from "../../../../operator/render/index.ts";
import type { VolumeUser } from "../../../../operator/render/pvc.ts";
import type { ResolvedApp } from "../../../../operator/render/resolve.ts";
import { config, resolved } from "../fixtures.ts";

const userOf = (app: ResolvedApp): VolumeUser => ({
  name: app.name,
  namespace: app.namespace,
  uid: app.uid,
  creationTimestamp: "2026-01-01T00:00:00Z",
  volume: app.spec.modelVolume,
});

test("the plan applies the ConfigMap before the Deployment that mounts it, then the Service", () => {
  const app = resolved({ modelfile: "SYSTEM hi" });
  const plan = renderApp(app, config(), [userOf(app)]);
  assert.deepEqual(
    plan.owned.map((o) => `${o.kind}/${o.metadata.name}`),
    ["ConfigMap/chat-modelfile", "Deployment/chat", "Service/chat"],
  );
  assert.equal(plan.volume.kind, "PersistentVolumeClaim");
  assert.equal(plan.volume.metadata.name, "models");
});

test("without a Modelfile the plan has no ConfigMap", () => {
  const app = resolved();
  assert.deepEqual(
    renderApp(app, config(), [userOf(app)]).owned.map((o) => o.kind),
    ["Deployment", "Service"],
  );
});

test("every owned object is in the app's namespace and controlled by the app", () => {
  const app = resolved({ modelfile: "SYSTEM hi" });
  for (const o of renderApp(app, config(), [userOf(app)]).owned) {
    assert.equal(o.metadata.namespace, "acme", o.kind);
    assert.deepEqual(
      o.metadata.ownerReferences?.filter((r) => r.controller).map((r) => r.uid),
      ["u1"],
      o.kind,
    );
    assert.equal(o.metadata.labels?.["app.kubernetes.io/managed-by"], "gantry-operator", o.kind);
  }
});
