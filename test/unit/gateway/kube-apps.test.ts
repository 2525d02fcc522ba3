import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import type { ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";
import { appInfoOf, endpointsOf } from "../../../server/gateway/kube/apps.ts";

const app = (spec: Record<string, unknown>, ready?: { status: string; reason: string }, generation = 2): ModelApp =>
  ({
    apiVersion: "gantry.dev/v1alpha1",
    kind: "ModelApp",
    metadata: { name: "chat", namespace: "acme", uid: "u1", generation },
    spec,
    status: ready
      ? {
          url: "http://gw/acme/chat",
          conditions: [
            {
              type: "Ready",
              ...ready,
              message: "why",
              observedGeneration: 2,
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        }
      : undefined,
  }) as unknown as ModelApp;

test("an app's auth mode, and whether it can become ready", () => {
  assert.equal(appInfoOf(app({ model: "m" })).auth, "private", "the default");
  assert.equal(appInfoOf(app({ model: "m", auth: "public" })).auth, "public");
  assert.equal(appInfoOf(app({ model: "m" }, { status: "True", reason: "ScaledToZero" })).failed, undefined);
  assert.equal(appInfoOf(app({ model: "m" }, { status: "False", reason: "Pulling" })).failed, undefined);
  assert.deepEqual(appInfoOf(app({ model: "m" }, { status: "False", reason: "ModelNotFound" })).failed, {
    reason: "ModelNotFound",
    message: "why",
  });
  assert.equal(
    appInfoOf(app({ model: "m" }, { status: "False", reason: "ModelNotFound" }, 3)).failed,
    undefined,
    "a condition of an older generation says nothing about the new spec",
  );
  const invalid = appInfoOf(app({ auth: "shared", scaling: { minReplicas: -1 } }));
  assert.equal(invalid.failed?.reason, "InvalidSpec");
  assert.equal(invalid.auth, "shared");
  assert.equal(appInfoOf(app({ model: "m" }, { status: "True", reason: "Serving" })).url, "http://gw/acme/chat");
});

test("EndpointSlice endpoints: the http port, readiness, terminating pods", () => {
  const slice = {
    addressType: "IPv4",
    ports: [{ name: "http", port: 11434 }],
    endpoints: [
      { addresses: ["10.244.128.5"], conditions: { ready: true }, targetRef: { kind: "Pod", name: "chat-abc" } },
      { addresses: ["10.244.128.6"], conditions: { ready: false } },
      { addresses: ["10.244.128.7"], conditions: { ready: true, terminating: true } },
      { addresses: ["10.244.128.8"] },
      { addresses: [] },
    ],
  } as unknown as V1EndpointSlice;
  assert.deepEqual(endpointsOf(slice), [
    { id: "10.244.128.5:11434", origin: "http://10.244.128.5:11434", ready: true, pod: "chat-abc" },
    { id: "10.244.128.6:11434", origin: "http://10.244.128.6:11434", ready: false },
    { id: "10.244.128.7:11434", origin: "http://10.244.128.7:11434", ready: false },
    { id: "10.244.128.8:11434", origin: "http://10.244.128.8:11434", ready: true },
  ]);
  assert.deepEqual(endpointsOf({ ...slice, addressType: "FQDN" } as V1EndpointSlice), []);
  const v6 = endpointsOf({
    addressType: "IPv6",
    ports: [{ port: 80 }],
    endpoints: [{ addresses: ["fd00::1"] }],
  } as V1EndpointSlice);
  assert.equal(v6[0]?.origin, "http://[fd00::1]:80");
});

test("an app's loadBalancing comes with it (LeastLoad by default)", () => {
  assert.equal(appInfoOf(app({ model: "m" })).loadBalancing?.strategy, "LeastLoad");
  const ph = appInfoOf(app({ model: "m", loadBalancing: { strategy: "PrefixHash", prefixHash: { replication: 8 } } }));
  assert.deepEqual(ph.loadBalancing, {
    strategy: "PrefixHash",
    prefixHash: { meanLoadFactor: 125, replication: 8, prefixCharLength: 100 },
  });
});

test("an app's model and the name requests send: the model itself, or <app>:latest with a modelfile", () => {
  const plain = appInfoOf(app({ model: "hf.co/o/r:Q4_K_M" }));
  assert.deepEqual([plain.model, plain.servedModel], ["hf.co/o/r:Q4_K_M", "hf.co/o/r:Q4_K_M"]);
  const tuned = appInfoOf(app({ model: "hf.co/o/r:Q4_K_M", modelfile: "SYSTEM be terse" }));
  assert.deepEqual([tuned.model, tuned.servedModel], ["hf.co/o/r:Q4_K_M", "chat:latest"]);
  assert.equal(appInfoOf(app({ auth: "shared", scaling: { minReplicas: -1 } })).servedModel, undefined);
});
