import assert from "node:assert/strict";
import { test } from "node:test";
import { renderDeployment } from "../../../../operator/render/deployment.ts";
import { renderService } from "../../../../operator/render/service.ts";
import { config, resolved } from "../fixtures.ts";

test("the Service is headless (no ClusterIP: the gateway goes to the pods), named after the app, controlled by it", () => {
  const s = renderService(resolved(), config());
  assert.equal(s.apiVersion, "v1");
  assert.equal(s.kind, "Service");
  assert.equal(s.metadata.name, "chat");
  assert.equal(s.metadata.namespace, "acme");
  assert.equal(s.spec.type, "ClusterIP");
  assert.equal(s.spec.clusterIP, "None");
  assert.deepEqual(
    s.metadata.ownerReferences.map((r) => [r.uid, r.controller]),
    [["u1", true]],
  );
});

test("the Service selects exactly the Deployment's pods and targets the named http port", () => {
  const cfg = config({ serverPort: 9000, podLabels: { team: "ml" } });
  const app = resolved({}, cfg);
  const s = renderService(app, cfg),
    d = renderDeployment(app, cfg);
  assert.deepEqual(s.spec.selector, d.spec.selector.matchLabels);
  assert.deepEqual(s.spec.ports, [{ name: "http", port: 9000, targetPort: "http", protocol: "TCP" }]);
  const containerPorts = d.spec.template.spec.containers[0]!.ports.map((p) => p.name);
  assert.ok(containerPorts.includes("http"));
});
