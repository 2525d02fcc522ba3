// The named model volume's PersistentVolumeClaim. Pure.
// Every app of the namespace that names the volume owns it (plain owner references), so the claim lives until the last
// of them is deleted. Its spec comes from the oldest of those apps, so apps that disagree cannot fight over it.
import type { ModelAppSpec } from "../api/v1alpha1/modelapp.ts";
import { ownerRef, MANAGED_BY, type AppIdentity } from "./labels.ts";
import { quantityString } from "./quantity.ts";

export interface VolumeUser extends AppIdentity {
  creationTimestamp: string;
  volume: ModelAppSpec["modelVolume"];
}

/** Orders the apps sharing a volume: oldest first, then by name (the first one defines the claim). */
export const byAge = (a: VolumeUser, b: VolumeUser): number =>
  a.creationTimestamp < b.creationTimestamp
    ? -1
    : a.creationTimestamp > b.creationTimestamp
      ? 1
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0;

export function renderModelVolume(users: readonly VolumeUser[]) {
  if (users.length === 0) throw new Error("renderModelVolume: no apps use the volume");
  const sorted = [...users].sort(byAge);
  const { volume, namespace } = sorted[0]!;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: volume.name,
      namespace,
      labels: {
        "app.kubernetes.io/name": "gantry",
        "app.kubernetes.io/component": "model-volume",
        "app.kubernetes.io/managed-by": MANAGED_BY,
      },
      ownerReferences: [...sorted].sort((a, b) => (a.uid < b.uid ? -1 : 1)).map(ownerRef),
    },
    spec: {
      accessModes: [volume.accessMode],
      resources: { requests: { storage: quantityString(volume.size) } },
      ...(volume.storageClassName ? { storageClassName: volume.storageClassName } : {}),
    },
  };
}
