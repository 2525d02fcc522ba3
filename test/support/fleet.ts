// A fleet of ModelApps on a test control plane of its own, for the operator's scale bench and fault tests: enough
// kwok nodes for one pod per app, the apps created through the API with bounded concurrency, a watch that counts the
// reconciled ones (never a poll of N objects), and an audit of what the operator made (nothing missing, nothing twice).
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  type KubeConfig,
  type KubernetesObject,
  type V1OwnerReference,
} from "@kubernetes/client-node";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../../operator/api/v1alpha1/modelapp.ts";
import { pooledApiClients } from "../../operator/kube/api-clients.ts";
import { nodeManifest } from "../cluster/fake-nodes.ts";

/** Volumes the fleet's apps share (each names models-<i % VOLUMES>), so claims have many owners, as in a real org. */
export const FLEET_VOLUMES = 20;

export const fleetAppName = (i: number): string => `app-${String(i).padStart(4, "0")}`;

export function fleetApp(namespace: string, i: number): ModelApp {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: "ModelApp",
    metadata: { name: fleetAppName(i), namespace },
    spec: {
      model: `hf.co/bench/model-${i % 10}-GGUF:Q4_K_M`,
      scaling: { minReplicas: 1 },
      modelVolume: { name: `models-${i % FLEET_VOLUMES}` },
    },
  } as ModelApp;
}

/** Adds kwok CPU nodes so `pods` pods fit (a node takes 110, as a kubelet's default). */
export async function addFleetNodes(kc: KubeConfig, pods: number): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  const template = await core.readNode({ name: "cpu-node-0" });
  const ip = template.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "127.0.0.1";
  const port = template.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 10250;
  const count = Math.ceil(pods / 100);
  for (let i = 0; i < count; i++)
    await core.createNode({ body: nodeManifest({ name: `fleet-node-${i}`, gpus: 0 }, ip, port) });
  return count;
}

/**
 * Creates apps [from, to) with `concurrency` requests in flight (one kubectl apply of thousands is minutes), on one
 * connection pool: a client per request was a TLS handshake per create, on both sides, beside the operator's work.
 */
export async function createFleet(kc: KubeConfig, namespace: string, from: number, to: number, concurrency = 8) {
  const custom = pooledApiClients(kc)(CustomObjectsApi);
  let next = from;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < to) {
        const i = next++;
        await custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          body: fleetApp(namespace, i),
        });
      }
    }),
  );
}

const reconciled = (a: ModelApp): boolean =>
  a.status?.observedGeneration === a.metadata.generation && (a.status?.conditions?.length ?? 0) > 0;
const readyReplicas = (a: ModelApp): boolean =>
  reconciled(a) && a.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";

/** A watch of the namespace's ModelApps: how many are reconciled (status of the current generation) and Ready. */
export class FleetWatch {
  private readonly informer;
  private readonly kc: KubeConfig;
  private readonly namespace: string;
  constructor(kc: KubeConfig, namespace: string) {
    this.kc = kc;
    this.namespace = namespace;
    const custom = kc.makeApiClient(CustomObjectsApi);
    this.informer = makeInformer<ModelApp & KubernetesObject>(
      kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL }) as never,
    );
    this.informer.on("error", () =>
      setTimeout(() => void (this.stopped ? undefined : this.informer.start().catch(() => undefined)), 1000),
    );
  }
  private stopped = false;
  start(): Promise<void> {
    return this.informer.start();
  }
  stop(): Promise<void> {
    this.stopped = true;
    return this.informer.stop();
  }
  counts(): { apps: number; reconciled: number; ready: number } {
    const all = this.informer.list() as ModelApp[];
    return { apps: all.length, reconciled: all.filter(reconciled).length, ready: all.filter(readyReplicas).length };
  }

  /**
   * Up to `max` apps not Ready, each with its Ready condition, its Deployment's status and its pods' phases: what a
   * timed-out wait says, so a failure names the layer that stalled (operator, controllers, scheduler or kwok).
   */
  async describeNotReady(max: number): Promise<string> {
    const apps = (this.informer.list() as ModelApp[]).filter((a) => !readyReplicas(a)).slice(0, max);
    if (apps.length === 0) return "every app in the watch's cache is Ready";
    const appsApi = this.kc.makeApiClient(AppsV1Api),
      core = this.kc.makeApiClient(CoreV1Api);
    const [deployments, pods] = await Promise.all([
      appsApi.listNamespacedDeployment({ namespace: this.namespace }),
      core.listNamespacedPod({ namespace: this.namespace }),
    ]).catch((err: unknown) => [undefined, String(err)] as const);
    if (!deployments || typeof pods === "string") return `(could not list the namespace: ${String(pods)})`;
    return apps
      .map((a) => {
        const name = a.metadata.name;
        const ready = a.status?.conditions?.find((c) => c.type === "Ready");
        const d = deployments.items.find((x) => x.metadata?.ownerReferences?.some((r) => r.uid === a.metadata.uid));
        const ds = d?.status;
        const its = pods.items.filter((p) => d && p.metadata?.name?.startsWith(`${d.metadata?.name}-`));
        const podText = its.map(
          (p) =>
            `${p.metadata?.name} ${p.status?.phase} node=${p.spec?.nodeName ?? "-"} ready=${p.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "-"}`,
        );
        return (
          `  ${name} gen ${a.metadata.generation} observed ${a.status?.observedGeneration}: ` +
          `Ready=${ready?.status} ${ready?.reason ?? ""} "${ready?.message ?? ""}"; ` +
          (d
            ? `Deployment ${d.metadata?.name} gen ${d.metadata?.generation} observed ${ds?.observedGeneration} ` +
              `replicas ${ds?.replicas ?? 0} updated ${ds?.updatedReplicas ?? 0} ready ${ds?.readyReplicas ?? 0}; ` +
              `pods: ${podText.join(", ") || "none"}`
            : "no Deployment")
        );
      })
      .join("\n");
  }

  /**
   * Resolves once `done(counts)` holds; rejects after timeoutMs with the counts at the cut. `progress` hears the
   * counts every progressMs, so a slow run is never silent.
   */
  async until(
    what: string,
    done: (c: ReturnType<FleetWatch["counts"]>) => boolean,
    o: { timeoutMs: number; progressMs?: number; progress?: (line: string) => void },
  ): Promise<void> {
    const t0 = Date.now();
    let lastProgress = t0;
    for (;;) {
      const c = this.counts();
      if (done(c)) return;
      const line = `${what}: ${c.reconciled}/${c.apps} reconciled, ${c.ready} ready after ${((Date.now() - t0) / 1000).toFixed(0)} s`;
      if (Date.now() - t0 > o.timeoutMs) throw new Error(`timed out: ${line}\n${await this.describeNotReady(5)}`);
      if (o.progress && Date.now() - lastProgress >= (o.progressMs ?? 10_000)) {
        lastProgress = Date.now();
        o.progress(line);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export interface FleetAudit {
  deployments: number;
  services: number;
  configMaps: number;
  claims: number;
  replicaSets: number;
  /** Objects of the operator's that are not exactly one per app (or per volume), in words; empty when none. */
  problems: string[];
}

const controllers = (refs: V1OwnerReference[] | undefined) => (refs ?? []).filter((r) => r.controller);

/**
 * What the operator made for `apps` apps: one Deployment, Service (and ReplicaSet: no spurious rollout) per app, each
 * controlled by its app; one claim per volume whose owners are its users, each once.
 */
export async function auditFleet(kc: KubeConfig, namespace: string, apps: number): Promise<FleetAudit> {
  const appsApi = kc.makeApiClient(AppsV1Api),
    core = kc.makeApiClient(CoreV1Api);
  const [deployments, services, configMaps, claims, replicaSets] = await Promise.all([
    appsApi.listNamespacedDeployment({ namespace }),
    core.listNamespacedService({ namespace }),
    core.listNamespacedConfigMap({ namespace, labelSelector: "app.kubernetes.io/managed-by" }),
    core.listNamespacedPersistentVolumeClaim({ namespace }),
    appsApi.listNamespacedReplicaSet({ namespace }),
  ]);
  const problems: string[] = [];
  for (const [kind, list, want] of [
    ["Deployment", deployments.items, apps],
    ["Service", services.items, apps],
    ["ReplicaSet", replicaSets.items, apps],
  ] as const) {
    if (list.length !== want) problems.push(`${list.length} ${kind}s for ${want} apps`);
    const bad = list.filter((o) => controllers(o.metadata?.ownerReferences).length !== 1);
    if (bad.length) problems.push(`${bad.length} ${kind}s without exactly one controller`);
  }
  const wantClaims = Math.min(apps, FLEET_VOLUMES);
  if (claims.items.length !== wantClaims) problems.push(`${claims.items.length} claims for ${wantClaims} volumes`);
  for (const c of claims.items) {
    const uids = (c.metadata?.ownerReferences ?? []).map((r) => r.uid);
    const users =
      Math.floor(apps / FLEET_VOLUMES) + (Number(c.metadata?.name?.split("-")[1]) < apps % FLEET_VOLUMES ? 1 : 0);
    if (new Set(uids).size !== uids.length) problems.push(`claim ${c.metadata?.name} names an owner twice`);
    if (uids.length !== users) problems.push(`claim ${c.metadata?.name} has ${uids.length} owners for ${users} users`);
  }
  return {
    deployments: deployments.items.length,
    services: services.items.length,
    configMaps: configMaps.items.length,
    claims: claims.items.length,
    replicaSets: replicaSets.items.length,
    problems,
  };
}
