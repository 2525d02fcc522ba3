// Watched caches of what the operator reads (the TS edition of client-go listers): ModelApps, the objects it creates
// (model cache Jobs among them), the apps' pods and every PVC. Reads come from these caches, never from the API
// server, so a steady state costs no requests. Each watch restarts itself after errors (server/common/kube-watch.ts).
import type {
  KubeConfig,
  KubernetesObject,
  ObjectCache,
  V1ConfigMap,
  V1Deployment,
  V1Job,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import { AppsV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { KubeWatch, resourcePath, type ListPage } from "../../server/common/kube-watch.ts";
import type { Logger } from "../../server/common/logger.ts";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../api/v1alpha1/modelapp.ts";
import { APP_LABEL, MANAGED_SELECTOR as MANAGED } from "../api/v1alpha1/labels.ts";
import { FleetIndex } from "./fleet-index.ts";
import { pooledApiClients } from "./api-clients.ts";

export type Cache<T> = ObjectCache<T>;

/**
 * A pod as the operator caches it: metadata and status whole, of its spec only the node (the status reads nothing
 * else; containers, env and volumes are most of a pod's size and are what the app's Deployment already says).
 */
export function trimPod(pod: V1Pod): void {
  if (pod.spec) pod.spec = { containers: [], ...(pod.spec.nodeName ? { nodeName: pod.spec.nodeName } : {}) };
}

export interface Caches {
  apps: Cache<ModelApp>;
  deployments: Cache<V1Deployment>;
  services: Cache<V1Service>;
  configMaps: Cache<V1ConfigMap>;
  claims: Cache<V1PersistentVolumeClaim>;
  pods: Cache<V1Pod>;
  jobs: Cache<V1Job>;
}

export type CacheName = keyof Caches;
export type ChangeHandler = (kind: CacheName, obj: KubernetesObject, event: "add" | "update" | "delete") => void;

export class ClusterCaches {
  readonly caches: Caches;
  /** Per-app views of the caches, updated before any change handler runs. */
  readonly index = new FleetIndex();
  private readonly watched: Array<{ kind: CacheName; watch: KubeWatch<KubernetesObject> }> = [];
  private synced = false;

  constructor(kc: KubeConfig, opts: { namespace?: string; logger: Logger }) {
    const client = pooledApiClients(kc);
    const core = client(CoreV1Api),
      apps = client(AppsV1Api),
      batch = client(BatchV1Api),
      custom = client(CustomObjectsApi);
    const ns = opts.namespace;
    const path = (prefix: string, plural: string) => resourcePath(prefix, plural, ns);
    const watch = (
      kind: CacheName,
      p: string,
      list: (page: ListPage) => Promise<unknown>,
      selector?: string,
      trim?: (obj: KubernetesObject) => void,
    ): void => {
      this.watched.push({
        kind,
        watch: new KubeWatch<KubernetesObject>(kc, {
          name: kind,
          path: p,
          list,
          ...(selector ? { labelSelector: selector } : {}),
          ...(trim ? { trim } : {}),
          logger: opts.logger,
        }),
      });
    };
    watch("apps", path(`/apis/${GROUP}/${VERSION}`, PLURAL), (page) =>
      ns
        ? custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, ...page })
        : custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, ...page }),
    );
    watch(
      "deployments",
      path("/apis/apps/v1", "deployments"),
      (page) =>
        ns
          ? apps.listNamespacedDeployment({ namespace: ns, labelSelector: MANAGED, ...page })
          : apps.listDeploymentForAllNamespaces({ labelSelector: MANAGED, ...page }),
      MANAGED,
    );
    watch(
      "services",
      path("/api/v1", "services"),
      (page) =>
        ns
          ? core.listNamespacedService({ namespace: ns, labelSelector: MANAGED, ...page })
          : core.listServiceForAllNamespaces({ labelSelector: MANAGED, ...page }),
      MANAGED,
    );
    watch(
      "configMaps",
      path("/api/v1", "configmaps"),
      (page) =>
        ns
          ? core.listNamespacedConfigMap({ namespace: ns, labelSelector: MANAGED, ...page })
          : core.listConfigMapForAllNamespaces({ labelSelector: MANAGED, ...page }),
      MANAGED,
    );
    watch("claims", path("/api/v1", "persistentvolumeclaims"), (page) =>
      ns
        ? core.listNamespacedPersistentVolumeClaim({ namespace: ns, ...page })
        : core.listPersistentVolumeClaimForAllNamespaces(page),
    );
    watch(
      "pods",
      path("/api/v1", "pods"),
      (page) =>
        ns
          ? core.listNamespacedPod({ namespace: ns, labelSelector: APP_LABEL, ...page })
          : core.listPodForAllNamespaces({ labelSelector: APP_LABEL, ...page }),
      APP_LABEL,
      trimPod,
    );
    watch(
      "jobs",
      path("/apis/batch/v1", "jobs"),
      (page) =>
        ns
          ? batch.listNamespacedJob({ namespace: ns, labelSelector: MANAGED, ...page })
          : batch.listJobForAllNamespaces({ labelSelector: MANAGED, ...page }),
      MANAGED,
    );
    this.caches = Object.fromEntries(this.watched.map((w) => [w.kind, w.watch.informer])) as unknown as Caches;
    for (const { kind, watch } of this.watched) watch.on((o, event) => this.index.observe(kind, o, event));
  }

  /** Calls `handler` for every change, including the objects of each (re)list as "add"/"update". */
  onChange(handler: ChangeHandler): void {
    for (const { kind, watch } of this.watched) watch.on((o, event) => handler(kind, o, event));
  }

  /** Starts every watch (each restarts itself after errors); resolves once each has listed its objects. */
  async start(): Promise<void> {
    await Promise.all(this.watched.map((w) => w.watch.start()));
    this.synced = true;
  }

  /** While not synced: the first watch still waiting for its first list, and why (its last error), in words. */
  waitingFor(): string | undefined {
    const w = this.watched.find((x) => !x.watch.synced);
    if (!w) return undefined;
    const what = w.kind === "apps" ? "ModelApps" : w.kind;
    return w.watch.lastError !== undefined
      ? `cannot list ${what}: ${watchError(w.kind, w.watch.lastError)}`
      : `listing ${what}`;
  }
  get hasSynced(): boolean {
    return this.synced;
  }

  async stop(): Promise<void> {
    await Promise.all(this.watched.map((w) => w.watch.stop()));
  }
}

/** A failed list or watch in words: the usual causes (no CRD, no RBAC, no API server) named, with what to do. */
function watchError(kind: CacheName, err: unknown): string {
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.code;
  const status = typeof code === "number" ? code : 0;
  if (status === 404 && kind === "apps")
    return "the ModelApp CRD is not installed (kubectl apply --server-side -f crds/, or helm install the chart)";
  if (status === 403) return "forbidden: the operator's account may not list them (check its RBAC)";
  if (status === 401) return "unauthorized: the kubeconfig's credentials were refused";
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
