import assert from "node:assert/strict";
import { test } from "node:test";
import { modelfileConfigMapName, renderModelfileConfigMap } from "../../../../operator/render/modelfile-configmap.ts";
import { MODEL, resolved } from "../fixtures.ts";

test("no Modelfile, no ConfigMap", () => {
  assert.equal(renderModelfileConfigMap(resolved()), undefined);
  assert.equal(renderModelfileConfigMap(resolved({ modelfile: "  \n" })), undefined);
});

test("the ConfigMap holds FROM spec.model and the overrides, controlled by the app", () => {
  const cm = renderModelfileConfigMap(resolved({ modelfile: "SYSTEM Be brief.\nPARAMETER temperature 0.1" }))!;
  assert.equal(cm.apiVersion, "v1");
  assert.equal(cm.kind, "ConfigMap");
  assert.equal(cm.metadata.name, "chat-modelfile");
  assert.equal(modelfileConfigMapName({ name: "chat" }), "chat-modelfile");
  assert.equal(cm.metadata.namespace, "acme");
  assert.ok(cm.data.Modelfile.startsWith(`FROM ${MODEL}\n`), cm.data.Modelfile);
  assert.ok(cm.data.Modelfile.includes("SYSTEM Be brief.\nPARAMETER temperature 0.1"));
  assert.deepEqual(
    cm.metadata.ownerReferences.map((r) => [r.kind, r.uid, r.controller]),
    [["ModelApp", "u1", true]],
  );
});
