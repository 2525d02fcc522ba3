// Pod volumes as host directories. A persistentVolumeClaim is one directory per claim, $dir/volumes/<ns>/<claim>,
// shared by every pod using the claim and kept across pod restarts and deletion (the provisioner's PV points at the
// same directory). emptyDir, configMap, secret, projected and downwardAPI volumes are per-pod directories under
// $dir/pods/<ns>_<pod>/volumes/, removed with the pod. hostPath is used as is. Containers see them at their
// mountPath through bind mounts in a private mount namespace (container-exec.sh).
import fs from "node:fs";
import path from "node:path";
import type { CoreV1Api, V1Container, V1Pod, V1Volume } from "@kubernetes/client-node";
import { fieldRefValue } from "./env.ts";

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

export const claimDir = (clusterDir: string, namespace: string, claim: string): string =>
  path.join(clusterDir, "volumes", namespace, claim);
export const podDir = (clusterDir: string, pod: V1Pod): string =>
  path.join(clusterDir, "pods", `${pod.metadata?.namespace}_${pod.metadata?.name}`);
/** The host pid of a container's current process (tests kill it to exercise restarts). */
export const containerPidFile = (clusterDir: string, pod: V1Pod, container: string): string =>
  path.join(podDir(clusterDir, pod), `${container}.pid`);

function writeFiles(
  dir: string,
  files: Record<string, string | Buffer>,
  items?: { key: string; path: string }[],
): void {
  fs.mkdirSync(dir, { recursive: true });
  const wanted = items ?? Object.keys(files).map((key) => ({ key, path: key }));
  for (const { key, path: rel } of wanted) {
    const value = files[key];
    if (value === undefined) continue;
    const file = path.join(dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, value);
  }
}

const decodeSecret = (data: Record<string, string> | undefined): Record<string, Buffer> =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")]));

async function projectedFiles(core: CoreV1Api, pod: V1Pod, vol: V1Volume, dir: string, podIp: string): Promise<void> {
  const ns = pod.metadata?.namespace ?? "default";
  for (const src of vol.projected?.sources ?? []) {
    if (src.configMap?.name) {
      const cm = await core.readNamespacedConfigMap({ name: src.configMap.name, namespace: ns }).catch(() => undefined);
      if (cm) writeFiles(dir, cm.data ?? {}, src.configMap.items);
    } else if (src.secret?.name) {
      const s = await core.readNamespacedSecret({ name: src.secret.name, namespace: ns }).catch(() => undefined);
      if (s) writeFiles(dir, decodeSecret(s.data), src.secret.items);
    } else if (src.downwardAPI) {
      writeFiles(
        dir,
        Object.fromEntries(
          (src.downwardAPI.items ?? [])
            .filter((i) => i.fieldRef)
            .map((i) => [i.path, fieldRefValue(pod, i.fieldRef?.fieldPath ?? "", podIp)]),
        ),
      );
    } else if (src.serviceAccountToken) {
      const tr = await core.createNamespacedServiceAccountToken({
        name: pod.spec?.serviceAccountName ?? "default",
        namespace: ns,
        body: {
          spec: {
            audiences: src.serviceAccountToken.audience ? [src.serviceAccountToken.audience] : [],
            expirationSeconds: src.serviceAccountToken.expirationSeconds ?? 3600,
            boundObjectRef: { kind: "Pod", apiVersion: "v1", name: pod.metadata?.name, uid: pod.metadata?.uid },
          },
        },
      });
      writeFiles(dir, { [src.serviceAccountToken.path]: tr.status?.token ?? "" });
    }
  }
}

/** Creates every volume's host directory and returns volume name → host path. */
export async function prepareVolumes(
  core: CoreV1Api,
  clusterDir: string,
  pod: V1Pod,
  podIp: string,
): Promise<Map<string, string>> {
  const ns = pod.metadata?.namespace ?? "default";
  const perPod = path.join(podDir(clusterDir, pod), "volumes");
  const result = new Map<string, string>();
  for (const vol of pod.spec?.volumes ?? []) {
    let dir = path.join(perPod, vol.name);
    if (vol.persistentVolumeClaim) dir = claimDir(clusterDir, ns, vol.persistentVolumeClaim.claimName);
    else if (vol.hostPath) dir = vol.hostPath.path;
    else if (vol.configMap) {
      const cm = await core.readNamespacedConfigMap({ name: vol.configMap.name ?? "", namespace: ns }).catch((e) => {
        if (!vol.configMap?.optional) throw e;
      });
      writeFiles(dir, { ...(cm?.data ?? {}), ...decodeSecret(cm?.binaryData) }, vol.configMap.items);
    } else if (vol.secret) {
      const s = await core.readNamespacedSecret({ name: vol.secret.secretName ?? "", namespace: ns }).catch((e) => {
        if (!vol.secret?.optional) throw e;
      });
      writeFiles(dir, decodeSecret(s?.data), vol.secret.items);
    } else if (vol.projected) await projectedFiles(core, pod, vol, dir, podIp);
    else if (vol.downwardAPI)
      await projectedFiles(
        core,
        pod,
        { name: vol.name, projected: { sources: [{ downwardAPI: vol.downwardAPI }] } },
        dir,
        podIp,
      );
    else if (!vol.emptyDir)
      throw new Error(`volume ${vol.name}: this volume type is not supported by the process runtime`);
    fs.mkdirSync(dir, { recursive: true });
    result.set(vol.name, dir);
  }
  return result;
}

export function containerMounts(container: V1Container, volumes: ReadonlyMap<string, string>): Mount[] {
  return (container.volumeMounts ?? []).map((m) => {
    const base = volumes.get(m.name);
    if (base === undefined)
      throw new Error(`container ${container.name}: volumeMount ${m.name} names no volume of the pod`);
    const source = m.subPath ? path.join(base, m.subPath) : base;
    if (m.subPath) fs.mkdirSync(source, { recursive: true });
    return { source, target: m.mountPath, readOnly: m.readOnly ?? false };
  });
}

export const mountsFileText = (mounts: Mount[]): string =>
  mounts.map((m) => `${m.source}\t${m.target}\t${m.readOnly ? "ro" : "rw"}\n`).join("");
