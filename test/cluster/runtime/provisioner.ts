// A dynamic provisioner for the cluster's default StorageClass: every pending claim of that class gets a PV whose
// hostPath is the claim's directory ($dir/volumes/<ns>/<claim>), pre-bound through claimRef; kube-controller-manager's
// PV controller completes the binding. Without it no pod using a PVC could ever be scheduled.
import fs from "node:fs";
import type { CoreV1Api, V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { STORAGE_CLASS, STORAGE_PROVISIONER } from "../fake-nodes.ts";
import { claimDir } from "./volumes.ts";

export function wantsVolume(pvc: V1PersistentVolumeClaim): boolean {
  const annotations = pvc.metadata?.annotations ?? {};
  const ours =
    pvc.spec?.storageClassName === STORAGE_CLASS ||
    annotations["volume.kubernetes.io/storage-provisioner"] === STORAGE_PROVISIONER;
  return ours && !pvc.metadata?.deletionTimestamp && !pvc.spec?.volumeName && pvc.status?.phase !== "Bound";
}

export async function provisionVolume(
  core: CoreV1Api,
  clusterDir: string,
  pvc: V1PersistentVolumeClaim,
): Promise<void> {
  const ns = pvc.metadata?.namespace ?? "default",
    name = pvc.metadata?.name ?? "";
  const dir = claimDir(clusterDir, ns, name);
  fs.mkdirSync(dir, { recursive: true });
  // Writable by any pod user, as local-path provisioners make them: the real node's containers run as the image's uid.
  fs.chmodSync(dir, 0o777);
  try {
    await core.createPersistentVolume({
      body: {
        apiVersion: "v1",
        kind: "PersistentVolume",
        metadata: {
          name: `pvc-${pvc.metadata?.uid}`,
          annotations: { "pv.kubernetes.io/provisioned-by": STORAGE_PROVISIONER },
        },
        spec: {
          capacity: { storage: pvc.spec?.resources?.requests?.storage ?? "1Gi" },
          accessModes: pvc.spec?.accessModes?.length ? pvc.spec.accessModes : ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: "Retain",
          storageClassName: STORAGE_CLASS,
          volumeMode: pvc.spec?.volumeMode ?? "Filesystem",
          hostPath: { path: dir, type: "DirectoryOrCreate" },
          claimRef: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name, uid: pvc.metadata?.uid },
        },
      },
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}
