// The cluster's fake nodes (kwok keeps them Ready and renews their leases) and its default StorageClass.
import type { KubeConfig, V1Node } from "@kubernetes/client-node";
import { CoreV1Api, StorageV1Api } from "@kubernetes/client-node";

export const GPU_TAINT = { key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" } as const;
/** The provisioner name the process runtime answers for (see runtime/provisioner.ts). */
export const STORAGE_PROVISIONER = "gantry.dev/process-runtime";
export const STORAGE_CLASS = "gantry-local";

interface FakeNode {
  name: string;
  gpus: number;
  product?: string;
}
export const FAKE_NODES: readonly FakeNode[] = [
  { name: "gpu-node-0", gpus: 8, product: "NVIDIA-H100-80GB-HBM3" },
  { name: "gpu-node-1", gpus: 4, product: "NVIDIA-L4" },
  { name: "cpu-node-0", gpus: 0 },
];

/** Status is part of the create on purpose: a Node keeps its status only on POST; later changes need /status. */
/** kubeletPort: where the process runtime serves container logs for `kubectl logs`. */
export function nodeManifest(n: FakeNode, nodeIp: string, kubeletPort: number): V1Node {
  const resources: Record<string, string> = { cpu: "96", memory: "1Ti", "ephemeral-storage": "1Ti", pods: "110" };
  const labels: Record<string, string> = {
    type: "kwok",
    "kubernetes.io/hostname": n.name,
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
  };
  if (n.gpus > 0) {
    resources["nvidia.com/gpu"] = String(n.gpus);
    Object.assign(labels, {
      "nvidia.com/gpu.present": "true",
      "nvidia.com/gpu.count": String(n.gpus),
      "nvidia.com/gpu.product": n.product ?? "unknown",
    });
  }
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: n.name,
      labels,
      annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
    },
    spec: n.gpus > 0 ? { taints: [{ ...GPU_TAINT }] } : {},
    status: {
      capacity: resources,
      allocatable: resources,
      addresses: [
        { type: "InternalIP", address: nodeIp },
        { type: "Hostname", address: n.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
      nodeInfo: {
        architecture: "amd64",
        operatingSystem: "linux",
        kubeletVersion: "v1.34.4-kwok",
        kubeProxyVersion: "",
        bootID: "",
        containerRuntimeVersion: "gantry-process-runtime",
        kernelVersion: "",
        machineID: "",
        osImage: "",
        systemUUID: "",
      },
    },
  };
}

export async function createFakeNodes(kc: KubeConfig, nodeIp: string, kubeletPort: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  for (const n of FAKE_NODES) await core.createNode({ body: nodeManifest(n, nodeIp, kubeletPort) });
}

export async function createDefaultStorageClass(kc: KubeConfig): Promise<void> {
  await kc.makeApiClient(StorageV1Api).createStorageClass({
    body: {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: STORAGE_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
      provisioner: STORAGE_PROVISIONER,
      reclaimPolicy: "Retain",
      volumeBindingMode: "Immediate",
    },
  });
}
