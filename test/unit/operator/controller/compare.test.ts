import assert from "node:assert/strict";
import { test } from "node:test";
import { covers } from "../../../../operator/controller/compare.ts";
import { renderApp } from "../../../../operator/render/index.ts";
import { config, resolved } from "../fixtures.ts";

const container = (extra: Record<string, unknown> = {}) => ({
  name: "server",
  image: "gantry:1",
  args: ["serve", "--model", "m"],
  env: [
    { name: "A", value: "1" },
    { name: "B", value: "2" },
  ],
  resources: { requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "1Gi" } },
  ...extra,
});
const deployment = (c: Record<string, unknown> = container()) => ({
  metadata: {
    name: "chat",
    labels: { app: "chat" },
    ownerReferences: [
      { apiVersion: "gantry.dev/v1alpha1", kind: "ModelApp", name: "chat", uid: "u1", controller: true },
    ],
  },
  spec: { replicas: 1, template: { spec: { containers: [c] } } },
});
const withServer = (live: ReturnType<typeof deployment>, c: Record<string, unknown>) => ({
  ...live,
  spec: { ...live.spec, template: { spec: { containers: [c] } } },
});

test("a live object equal to the desired one covers it", () => {
  assert.ok(covers(deployment(), deployment()));
  assert.ok(covers(structuredClone(deployment()), deployment()));
});

test("fields the API server or other managers add do not matter", () => {
  const live = deployment(
    container({ terminationMessagePath: "/dev/termination-log", imagePullPolicy: "IfNotPresent" }),
  );
  const more = {
    ...live,
    metadata: {
      ...live.metadata,
      resourceVersion: "42",
      labels: { app: "chat", extra: "x" },
      annotations: { "deployment.kubernetes.io/revision": "3" },
    },
    status: { readyReplicas: 1 },
  };
  assert.ok(covers(more, deployment()));
});

test("named lists match by name regardless of order, and extra live items are fine", () => {
  const reorderedEnv = container({
    env: [
      { name: "B", value: "2" },
      { name: "INJECTED", value: "x" },
      { name: "A", value: "1" },
    ],
  });
  const sidecar = { name: "istio-proxy", image: "proxy" };
  const live = { ...deployment(), spec: { replicas: 1, template: { spec: { containers: [sidecar, reorderedEnv] } } } };
  assert.ok(covers(live, deployment()));
});

test("a named item missing or changed in the live list is not covered", () => {
  assert.ok(
    !covers(withServer(deployment(), container({ env: [{ name: "A", value: "1" }] })), deployment()),
    "missing B",
  );
  assert.ok(
    !covers(
      withServer(
        deployment(),
        container({
          env: [
            { name: "A", value: "1" },
            { name: "B", value: "3" },
          ],
        }),
      ),
      deployment(),
    ),
    "B changed",
  );
  assert.ok(!covers(withServer(deployment(), container({ name: "other" })), deployment()), "container renamed");
});

test("atomic lists (args) must match exactly", () => {
  // live args → covered
  const cases: [string[], boolean][] = [
    [["serve", "--model", "m"], true],
    [["serve", "--model", "x"], false],
    [["serve", "--model"], false],
    [["serve", "--model", "m", "--extra"], false],
    [["--model", "m", "serve"], false],
  ];
  for (const [args, want] of cases) {
    assert.equal(covers(withServer(deployment(), container({ args })), deployment()), want, args.join(" "));
  }
});

test("a changed scalar anywhere is detected", () => {
  const live = deployment();
  assert.ok(!covers({ ...live, spec: { ...live.spec, replicas: 2 } }, deployment()), "replicas");
  assert.ok(!covers(withServer(live, container({ image: "gantry:2" })), deployment()), "image");
  assert.ok(!covers({ ...live, metadata: { ...live.metadata, labels: { app: "other" } } }, deployment()), "label");
  assert.ok(!covers({ ...live, spec: { ...live.spec, replicas: "1" } }, deployment()), '1 vs "1" outside quantities');
});

test("a missing live object, array or field is not covered", () => {
  assert.ok(!covers(undefined, deployment()));
  assert.ok(!covers(null, deployment()));
  assert.ok(!covers({ metadata: deployment().metadata }, deployment()), "no spec");
  assert.ok(!covers(withServer(deployment(), { ...container(), env: undefined }), deployment()), "no env");
  assert.ok(!covers(withServer(deployment(), { ...container(), image: undefined }), deployment()), "no image");
  assert.ok(!covers({ list: "not a list" }, { list: ["a"] }));
});

test("empty desired objects and lists are covered by absence", () => {
  assert.ok(covers({}, { tolerations: [] }));
  assert.ok(covers({}, { resources: {} }));
  assert.ok(covers({ tolerations: [] }, { tolerations: [] }));
  assert.ok(!covers({ tolerations: [{ key: "k" }] }, { tolerations: [] }), "an atomic list is replaced as a whole");
  assert.ok(covers({ a: 1 }, { a: undefined }));
});

test("owner references are matched by uid", () => {
  const desired = { metadata: { ownerReferences: [{ kind: "ModelApp", name: "chat", uid: "u2" }] } };
  // The app was deleted and recreated under the same name: the live object still lists the old owner first.
  const live = {
    metadata: {
      ownerReferences: [
        { kind: "ModelApp", name: "chat", uid: "u1" },
        { kind: "ModelApp", name: "chat", uid: "u2" },
      ],
    },
  };
  assert.ok(covers(live, desired), "the owner with the desired uid is there");
  assert.ok(
    !covers({ metadata: { ownerReferences: [{ kind: "ModelApp", name: "chat", uid: "u1" }] } }, desired),
    "only the old uid",
  );
});

test("owner references of several apps (a shared volume) match in any order", () => {
  const refs = [
    { name: "a", uid: "u1" },
    { name: "b", uid: "u2" },
  ];
  assert.ok(
    covers(
      { metadata: { ownerReferences: [refs[1], { name: "c", uid: "u3" }, refs[0]] } },
      { metadata: { ownerReferences: refs } },
    ),
  );
  assert.ok(!covers({ metadata: { ownerReferences: [refs[0]] } }, { metadata: { ownerReferences: refs } }));
});

test("resource quantities compare by value under requests and limits", () => {
  // live resources → covered by {requests: {cpu: "1", memory: "1Gi"}, limits: {memory: "1Gi"}}
  const cases: [Record<string, unknown>, boolean][] = [
    [{ requests: { cpu: "1000m", memory: "1024Mi" }, limits: { memory: "1073741824" } }, true],
    [{ requests: { cpu: 1, memory: "1Gi" }, limits: { memory: "1Gi" } }, true],
    [{ requests: { cpu: "1", memory: "1G" }, limits: { memory: "1Gi" } }, false],
    [{ requests: { cpu: "2", memory: "1Gi" }, limits: { memory: "1Gi" } }, false],
    [{ requests: { cpu: "1", memory: "1Gi" }, limits: { memory: "2Gi" } }, false],
  ];
  for (const [resources, want] of cases) {
    assert.equal(
      covers(withServer(deployment(), container({ resources })), deployment()),
      want,
      JSON.stringify(resources),
    );
  }
});

test("a PVC's storage request compares by value", () => {
  const desired = { spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "20Gi" } } } };
  assert.ok(
    covers(
      {
        spec: {
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "20480Mi" } },
          volumeName: "pv-1",
          storageClassName: "standard",
        },
      },
      desired,
    ),
  );
  assert.ok(
    !covers({ spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "10Gi" } } } }, desired),
  );
  assert.ok(
    covers(
      { spec: { resources: { requests: { cpu: "1" } } } },
      { spec: { resources: { requests: { cpu: "1000m" } } } },
    ),
  );
});

test("quantity spelling outside resources is compared literally", () => {
  assert.ok(!covers({ data: { size: "1000m" } }, { data: { size: "1" } }));
  assert.ok(!covers({ env: [{ name: "MEM", value: "1024Mi" }] }, { env: [{ name: "MEM", value: "1Gi" }] }));
});

test("a rendered plan covers itself after a JSON round trip (steady state sends nothing)", () => {
  const app = resolved({ modelfile: "SYSTEM hi", resources: { profile: "nvidia-gpu", cpu: 2, memory: "8Gi" } });
  const plan = renderApp(app, config(), [
    {
      name: "chat",
      namespace: "acme",
      uid: "u1",
      creationTimestamp: "2026-01-01T00:00:00Z",
      volume: app.spec.modelVolume,
    },
  ]);
  for (const o of [plan.volume, ...plan.owned]) assert.ok(covers(JSON.parse(JSON.stringify(o)), o), o.kind);
});
