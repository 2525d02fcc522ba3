// The process runtime: the kubelet for pods labelled gantry.dev/process-runtime=true once they are bound to one of the
// cluster's kwok nodes (kwok's own stages skip those pods). Each pod runs as local processes in its own network and
// mount namespaces (runtime/pod-runner.ts); it also provisions PersistentVolumes for the default StorageClass.
// It also serves the kubelet log endpoint (`kubectl logs`). Started by control-plane.ts as a recorded process.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import type {
  V1EndpointSlice,
  V1Service,
  Informer,
  ObjectCache,
  KubernetesObject,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
} from "@kubernetes/client-node";
import {
  CoreV1Api,
  DiscoveryV1Api,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { PROCESS_RUNTIME_LABEL } from "./kwok-config.ts";
import { clusterNetId, deleteClusterPodNetworks } from "./runtime/pod-network.ts";
import { startLogServer } from "./runtime/log-server.ts";
import { PodRunner } from "./runtime/pod-runner.ts";
import { provisionVolume, wantsVolume } from "./runtime/provisioner.ts";
import { ServiceNetwork } from "./runtime/service-network.ts";

const { values: args } = parseArgs({
  options: {
    dir: { type: "string" },
    kubeconfig: { type: "string" },
    repo: { type: "string" },
    "kubelet-port": { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
    apiserver: { type: "string" },
  },
});
const clusterDir = args.dir ?? "",
  repo = args.repo ?? path.resolve(import.meta.dirname, "../..");
if (!clusterDir || !args.kubeconfig) {
  throw new Error(
    "usage: process-runtime.ts --dir=<cluster dir> --kubeconfig=<file> [--repo=<root>] [--kubelet-port=<n> --tls-cert=<f> --tls-key=<f>]",
  );
}
const log = (msg: string): void => {
  console.error(`${new Date().toISOString()} process-runtime: ${msg}`);
};

const kc = new KubeConfig();
kc.loadFromFile(args.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const netId = clusterNetId(clusterDir);

/** `gantry` on the pods' PATH runs this checkout's CLI with the same Node as the runtime. */
function writeShims(): string {
  const dir = path.join(clusterDir, "shims");
  fs.mkdirSync(dir, { recursive: true });
  const gantry = path.join(dir, "gantry");
  fs.writeFileSync(
    gantry,
    `#!/bin/sh\nexec '${process.execPath}' '${path.join(repo, "server/cli/gantry.ts")}' "$@"\n`,
    { mode: 0o755 },
  );
  return `${dir}:${path.dirname(process.execPath)}`;
}

const shimPath = writeShims();
// Pods reach each other (the gateway dials model pods) through the host: forwarding between the pods' veths. Pods have
// routes only to the pod and Service ranges, and the host marks every other 10.244/16 and 10.96/16 address unreachable.
fs.writeFileSync("/proc/sys/net/ipv4/ip_forward", "1");
const apiserver = new URL(`https://${args.apiserver ?? new URL(kc.getCurrentCluster()?.server ?? "").host}`);
const services = new ServiceNetwork({ apiserver: { host: apiserver.hostname, port: Number(apiserver.port) }, log });
const runners = new Map<string, PodRunner>();
let nextIndex = 0;
const keyOf = (o: KubernetesObject): string => `${o.metadata?.namespace}/${o.metadata?.name}`;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const HANDLER_ATTEMPTS = 30;

async function writeStatus(pod: V1Pod, status: Record<string, unknown>): Promise<void> {
  try {
    await core.patchNamespacedPodStatus(
      { name: pod.metadata?.name ?? "", namespace: pod.metadata?.namespace ?? "", body: { status } },
      mergePatch,
    );
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
  }
}

function event(pod: V1Pod, type: "Normal" | "Warning", reason: string, message: string): void {
  const at = new Date();
  core
    .createNamespacedEvent({
      namespace: pod.metadata?.namespace ?? "default",
      body: {
        metadata: { generateName: `${pod.metadata?.name}.` },
        involvedObject: {
          apiVersion: "v1",
          kind: "Pod",
          name: pod.metadata?.name,
          namespace: pod.metadata?.namespace,
          uid: pod.metadata?.uid,
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: at,
        lastTimestamp: at,
        source: { component: "kubelet", host: pod.spec?.nodeName },
      },
    })
    .catch((err: { code?: number }) => {
      // 403/404: the namespace is being deleted or is gone, so nobody could read the event anyway.
      if (err.code !== 403 && err.code !== 404) log(`event ${reason} for ${keyOf(pod)}: ${String(err)}`);
    });
}

/** The node's IP when it is one of the cluster's kwok nodes, else undefined; throws when the node cannot be read. */
async function nodeIp(name: string): Promise<string | undefined> {
  const node: V1Node | undefined = await core.readNode({ name }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
  if (node?.metadata?.annotations?.["kwok.x-k8s.io/node"] !== "fake") return undefined;
  return node.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "127.0.0.1";
}

async function forceDelete(pod: V1Pod): Promise<void> {
  await core
    .deleteNamespacedPod({
      name: pod.metadata?.name ?? "",
      namespace: pod.metadata?.namespace ?? "",
      gracePeriodSeconds: 0,
    })
    .catch((err: { code?: number }) => {
      if (err.code !== 404) log(`delete ${keyOf(pod)}: ${String(err)}`);
    });
}

async function terminate(runner: PodRunner | undefined, pod: V1Pod, graceSeconds: number): Promise<void> {
  if (runner && !runner.terminating) {
    log(`stopping ${keyOf(pod)} (grace ${graceSeconds}s)`);
    await runner.terminate(graceSeconds);
  }
  runners.delete(keyOf(pod));
}

async function onPod(pod: V1Pod): Promise<void> {
  const key = keyOf(pod),
    runner = runners.get(key);
  if (pod.metadata?.deletionTimestamp) {
    const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (runner?.terminating) return;
    await terminate(runner, pod, grace);
    await forceDelete(pod);
    return;
  }
  if (runner) {
    runner.update(pod);
    return;
  }
  const nodeName = pod.spec?.nodeName;
  if (!nodeName || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
  const hostIp = await nodeIp(nodeName);
  if (hostIp === undefined || runners.has(key)) return;
  const r = new PodRunner(pod, hostIp, {
    core,
    clusterDir,
    netId,
    index: nextIndex++,
    shimPath,
    services,
    writeStatus,
    event,
    log,
  });
  runners.set(key, r);
  log(`starting ${key} on ${nodeName}`);
  void r.run();
}

/** An informer that restarts itself after errors (client-node stops informers on any error but 410 Gone). */
function keepAlive<T extends KubernetesObject>(name: string, inf: Informer<T> & ObjectCache<T>): Promise<void> {
  inf.on("error", (err) => {
    log(`${name} watch error: ${String(err)}; restarting`);
    setTimeout(() => {
      void inf.start().catch(() => undefined);
    }, 1000);
  });
  return inf.start();
}

/**
 * Runs an event handler; a failure (an apiserver busy under a whole test run) is retried after a second, as a
 * controller requeues, because a pod or claim that does not change again would never get another event.
 */
const handle = (what: string, fn: () => Promise<void>, attempt = 1): void => {
  fn().catch((err) => {
    log(`${what}: ${String(err)}${attempt < HANDLER_ATTEMPTS ? "; retrying" : "; giving up"}`);
    if (attempt < HANDLER_ATTEMPTS) setTimeout(() => handle(what, fn, attempt + 1), 1000);
  });
};

/**
 * An informer event's handler, run on the object as the informer knows it at each attempt (not at all once it is gone).
 */
function handleLatest<T extends KubernetesObject>(
  what: string,
  inf: ObjectCache<T>,
  obj: T,
  fn: (latest: T) => Promise<void>,
): void {
  handle(`${what} ${keyOf(obj)}`, async () => {
    const latest = inf.get(obj.metadata?.name ?? "", obj.metadata?.namespace);
    if (latest) await fn(latest);
  });
}

const podInformer = makeInformer<V1Pod>(
  kc,
  "/api/v1/pods",
  () => core.listPodForAllNamespaces({ labelSelector: `${PROCESS_RUNTIME_LABEL}=true` }),
  `${PROCESS_RUNTIME_LABEL}=true`,
);
podInformer.on("add", (p) => handleLatest("pod", podInformer, p, onPod));
podInformer.on("update", (p) => handleLatest("pod", podInformer, p, onPod));
podInformer.on("delete", (p) => handle(`pod ${keyOf(p)}`, () => terminate(runners.get(keyOf(p)), p, 0)));

const pvcInformer = makeInformer<V1PersistentVolumeClaim>(kc, "/api/v1/persistentvolumeclaims", () =>
  core.listPersistentVolumeClaimForAllNamespaces(),
);
const onClaim = (pvc: V1PersistentVolumeClaim): void => {
  if (!wantsVolume(pvc)) return;
  handleLatest("claim", pvcInformer, pvc, async (latest) => {
    if (wantsVolume(latest)) await provisionVolume(core, clusterDir, latest);
  });
};
pvcInformer.on("add", onClaim);
pvcInformer.on("update", onClaim);

const svcInformer = makeInformer<V1Service>(kc, "/api/v1/services", () => core.listServiceForAllNamespaces());
svcInformer.on("add", (s) => services.setService(s));
svcInformer.on("update", (s) => services.setService(s));
svcInformer.on("delete", (s) => services.setService(s, true));
const discovery = kc.makeApiClient(DiscoveryV1Api);
const sliceInformer = makeInformer<V1EndpointSlice>(kc, "/apis/discovery.k8s.io/v1/endpointslices", () =>
  discovery.listEndpointSliceForAllNamespaces(),
);
sliceInformer.on("add", (s) => services.setSlice(s));
sliceInformer.on("update", (s) => services.setSlice(s));
sliceInformer.on("delete", (s) => services.setSlice(s, true));

async function shutdown(): Promise<void> {
  log(`shutting down: stopping ${runners.size} pod(s)`);
  await Promise.all([...runners.values()].map((r) => r.terminate(2)));
  services.close();
  deleteClusterPodNetworks(netId);
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());

// Pods of a previous runtime of this cluster (crash) lost their processes: remove their networks; they start afresh.
const stale = deleteClusterPodNetworks(netId);
if (stale) log(`removed ${stale} stale pod network(s)`);
if (args["kubelet-port"] && args["tls-cert"] && args["tls-key"]) {
  startLogServer({
    port: Number(args["kubelet-port"]),
    cert: args["tls-cert"],
    key: args["tls-key"],
    podsDir: path.join(clusterDir, "pods"),
    log,
  });
}
await keepAlive("service", svcInformer);
await keepAlive("endpointslice", sliceInformer);
await keepAlive("pvc", pvcInformer);
await keepAlive("pod", podInformer);
fs.writeFileSync(path.join(clusterDir, "runtime.ready"), new Date().toISOString());
log("ready");
