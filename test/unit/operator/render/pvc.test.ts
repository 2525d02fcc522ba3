import assert from "node:assert/strict";
import { test } from "node:test";
import type { ModelAppSpec } from "../../../../operator/api/v1alpha1/modelapp.ts";
import { byAge, renderModelVolume, type VolumeUser } from "../../../../operator/render/pvc.ts";

const volume = (v: Partial<ModelAppSpec["modelVolume"]> = {}): ModelAppSpec["modelVolume"] => ({
  name: "models",
  size: "20Gi",
  accessMode: "ReadWriteOnce",
  ...v,
});
const user = (
  name: string,
  uid: string,
  creationTimestamp: string,
  v: Partial<ModelAppSpec["modelVolume"]> = {},
): VolumeUser => ({ name, namespace: "acme", uid, creationTimestamp, volume: volume(v) });

test("a single app's claim: its name, size and access mode, owned (not controlled) by the app", () => {
  const pvc = renderModelVolume([user("chat", "u1", "2026-01-01T00:00:00Z")]);
  assert.equal(pvc.apiVersion, "v1");
  assert.equal(pvc.kind, "PersistentVolumeClaim");
  assert.equal(pvc.metadata.name, "models");
  assert.equal(pvc.metadata.namespace, "acme");
  assert.deepEqual(pvc.spec, { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "20Gi" } } });
  assert.deepEqual(pvc.metadata.ownerReferences, [
    { apiVersion: "gantry.dev/v1alpha1", kind: "ModelApp", name: "chat", uid: "u1" },
  ]);
});

test("every sharing app owns the claim with a plain owner reference", () => {
  const users = [
    user("b", "u2", "2026-01-02T00:00:00Z"),
    user("a", "u1", "2026-01-03T00:00:00Z"),
    user("c", "u3", "2026-01-01T00:00:00Z"),
  ];
  const refs = renderModelVolume(users).metadata.ownerReferences;
  assert.deepEqual(refs.map((r) => r.uid).sort(), ["u1", "u2", "u3"]);
  for (const r of refs) {
    assert.ok(!r.controller, `${r.name} must not be the controller`);
    assert.ok(!r.blockOwnerDeletion, r.name);
  }
  // The order does not depend on the order the apps were listed in.
  assert.deepEqual(renderModelVolume([...users].reverse()), renderModelVolume(users));
});

test("the claim's spec comes from the oldest app, then the first by name", () => {
  // users → the size that wins
  const cases: [VolumeUser[], string][] = [
    [
      [
        user("new", "u1", "2026-02-01T00:00:00Z", { size: "50Gi" }),
        user("old", "u2", "2026-01-01T00:00:00Z", { size: "10Gi" }),
      ],
      "10Gi",
    ],
    [
      [
        user("old", "u2", "2026-01-01T00:00:00Z", { size: "10Gi" }),
        user("new", "u1", "2026-02-01T00:00:00Z", { size: "50Gi" }),
      ],
      "10Gi",
    ],
    [
      [
        user("zeta", "u1", "2026-01-01T00:00:00Z", { size: "50Gi" }),
        user("alpha", "u2", "2026-01-01T00:00:00Z", { size: "10Gi" }),
      ],
      "10Gi",
    ],
  ];
  for (const [users, size] of cases) {
    assert.equal(renderModelVolume(users).spec.resources.requests.storage, size, users.map((u) => u.name).join(","));
  }
  const mixed = renderModelVolume([
    user("new", "u1", "2026-02-01T00:00:00Z", { size: "50Gi", accessMode: "ReadWriteOnce" }),
    user("old", "u2", "2026-01-01T00:00:00Z", {
      size: 10737418240,
      accessMode: "ReadWriteMany",
      storageClassName: "nfs",
    }),
  ]);
  assert.deepEqual(mixed.spec, {
    accessModes: ["ReadWriteMany"],
    resources: { requests: { storage: "10737418240" } },
    storageClassName: "nfs",
  });
});

test("byAge orders oldest first, then by name", () => {
  const users = [
    user("b", "1", "2026-01-02T00:00:00Z"),
    user("c", "2", "2026-01-01T00:00:00Z"),
    user("a", "3", "2026-01-02T00:00:00Z"),
  ];
  assert.deepEqual(
    [...users].sort(byAge).map((u) => u.name),
    ["c", "a", "b"],
  );
});

test("a volume no app uses cannot be rendered", () => {
  assert.throws(() => renderModelVolume([]), /no apps/);
});
