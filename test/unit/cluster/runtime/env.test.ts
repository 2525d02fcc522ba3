import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { containerEnv, expandRefs, fieldRefValue } from "../../../../test/cluster/runtime/env.ts";

const pod: V1Pod = {
  metadata: { name: "p1", namespace: "ns1", uid: "u-1", labels: { app: "web" } },
  spec: { nodeName: "gpu-node-0", containers: [] },
};
const noObjects = { configMap: async () => undefined, secret: async () => undefined };

test("$(VAR) references expand like the kubelet's: defined ones substituted, $$ escapes, unknown ones kept", () => {
  assert.equal(expandRefs("$(A)-$(B)-$$(A)-$(MISSING)", { A: "1", B: "2" }), "1-2-$(A)-$(MISSING)");
});

test("fieldRef values come from the pod and the runtime's pod IP", () => {
  assert.equal(fieldRefValue(pod, "metadata.name", "10.244.128.9"), "p1");
  assert.equal(fieldRefValue(pod, "metadata.namespace", ""), "ns1");
  assert.equal(fieldRefValue(pod, "status.podIP", "10.244.128.9"), "10.244.128.9");
  assert.equal(fieldRefValue(pod, "metadata.labels['app']", ""), "web");
  assert.throws(() => fieldRefValue(pod, "spec.unknown", ""), /unsupported fieldRef/);
});

test("env: envFrom first, env later wins, values see earlier variables, key refs resolve", async () => {
  const data = {
    configMap: async (name: string) => (name === "cm" ? { MODE: "fast", LEVEL: "3" } : undefined),
    secret: async (name: string) => (name === "s" ? { token: "t0k" } : undefined),
  };
  const env = await containerEnv(
    {
      name: "c",
      envFrom: [{ configMapRef: { name: "cm" }, prefix: "CFG_" }],
      env: [
        { name: "CFG_MODE", value: "slow" },
        { name: "URL", value: "http://$(POD_IP):8080" },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "URL2", value: "http://$(POD_IP):8080" },
        { name: "TOKEN", valueFrom: { secretKeyRef: { name: "s", key: "token" } } },
      ],
    },
    pod,
    "10.244.128.3",
    data,
    { PATH: "/bin" },
  );
  assert.deepEqual(env, {
    PATH: "/bin",
    CFG_MODE: "slow",
    CFG_LEVEL: "3",
    URL: "http://$(POD_IP):8080",
    POD_IP: "10.244.128.3",
    URL2: "http://10.244.128.3:8080",
    TOKEN: "t0k",
  });
});

test("a missing ConfigMap fails unless optional", async () => {
  await assert.rejects(
    containerEnv({ name: "c", envFrom: [{ configMapRef: { name: "nope" } }] }, pod, "", noObjects, {}),
    /configMap nope not found/,
  );
  assert.deepEqual(
    await containerEnv(
      { name: "c", envFrom: [{ configMapRef: { name: "nope", optional: true } }] },
      pod,
      "",
      noObjects,
      {},
    ),
    {},
  );
});
