// Watched caches of what the operator reads (the TS edition of client-go listers): ModelApps, the objects it creates,
// the apps' pods and every PVC. Reads come from these caches, never from the API server, so a steady state costs no
// requests. client-node's informer stops on any error but 410 Gone: each one here restarts itself with backoff.
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ObjectCache,
  Informer,
  V1ConfigMap,
  V1Deployment,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, makeInformer } from "@kubernetes/client-node";
import type { Logger } from "../../server/common/logger.ts";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../api/v1alpha1/modelapp.ts";
import { APP_LABEL, MANAGED_BY } from "../render/labels.ts";

export type Cache<T> = ObjectCache<T>;

export interface Caches {
  apps: Cache<ModelApp>;
  deployments: Cache<V1Deployment>;
  services: Cache<V1Service>;
  configMaps: Cache<V1ConfigMap>;
  claims: Cache<V1PersistentVolumeClaim>;
  pods: Cache<V1Pod>;
}

export type CacheName = keyof Caches;
export type ChangeHandler = (kind: CacheName, obj: KubernetesObject, event: "add" | "update" | "delete") => void;

type AnyInformer = Informer<KubernetesObject> & ObjectCache<KubernetesObject>;

interface Watched {
  kind: CacheName;
  informer: AnyInformer;
  /** Resolves when the first list succeeded. */
  listed: Promise<void>;
  /** Whether the first list succeeded. */
  synced: boolean;
  /** Why the watch last failed, in words for /readyz. */
  lastError?: string;
  backoffMs: number;
}

const MANAGED = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

export class ClusterCaches {
  readonly caches: Caches;
  private readonly watched: Watched[] = [];
  private readonly logger: Logger;
  private stopped = false;
  private synced = false;

  constructor(kc: KubeConfig, opts: { namespace?: string; logger: Logger }) {
    this.logger = opts.logger;
    const core = kc.makeApiClient(CoreV1Api),
      apps = kc.makeApiClient(AppsV1Api),
      custom = kc.makeApiClient(CustomObjectsApi);
    const ns = opts.namespace;
    const path = (prefix: string, plural: string) => `${prefix}${ns ? `/namespaces/${ns}` : ""}/${plural}`;
    const watch = (kind: CacheName, p: string, list: () => Promise<unknown>, selector?: string): void => {
      let listed!: () => void;
      const w = {
        kind,
        listed: new Promise<void>((r) => {
          listed = r;
        }),
        synced: false,
        backoffMs: MIN_BACKOFF_MS,
      } as Watched;
      const listFn = async () => {
        const l = await list();
        w.synced = true;
        w.lastError = undefined;
        listed();
        w.backoffMs = MIN_BACKOFF_MS; // healthy again: the next failure retries quickly
        return l as KubernetesListObject<KubernetesObject>;
      };
      w.informer = makeInformer(kc, p, listFn, selector) as AnyInformer;
      this.watched.push(w);
    };
    watch("apps", path(`/apis/${GROUP}/${VERSION}`, PLURAL), () =>
      ns
        ? custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL })
        : custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }),
    );
    watch(
      "deployments",
      path("/apis/apps/v1", "deployments"),
      () =>
        ns
          ? apps.listNamespacedDeployment({ namespace: ns, labelSelector: MANAGED })
          : apps.listDeploymentForAllNamespaces({ labelSelector: MANAGED }),
      MANAGED,
    );
    watch(
      "services",
      path("/api/v1", "services"),
      () =>
        ns
          ? core.listNamespacedService({ namespace: ns, labelSelector: MANAGED })
          : core.listServiceForAllNamespaces({ labelSelector: MANAGED }),
      MANAGED,
    );
    watch(
      "configMaps",
      path("/api/v1", "configmaps"),
      () =>
        ns
          ? core.listNamespacedConfigMap({ namespace: ns, labelSelector: MANAGED })
          : core.listConfigMapForAllNamespaces({ labelSelector: MANAGED }),
      MANAGED,
    );
    watch("claims", path("/api/v1", "persistentvolumeclaims"), () =>
      ns
        ? core.listNamespacedPersistentVolumeClaim({ namespace: ns })
        : core.listPersistentVolumeClaimForAllNamespaces(),
    );
    watch(
      "pods",
      path("/api/v1", "pods"),
      () =>
        ns
          ? core.listNamespacedPod({ namespace: ns, labelSelector: APP_LABEL })
          : core.listPodForAllNamespaces({ labelSelector: APP_LABEL }),
      APP_LABEL,
    );
    this.caches = Object.fromEntries(this.watched.map((w) => [w.kind, w.informer])) as unknown as Caches;
  }

  /** Calls `handler` for every change, including the objects of each (re)list as "add"/"update". */
  onChange(handler: ChangeHandler): void {
    for (const { kind, informer } of this.watched) {
      informer.on("add", (o) => handler(kind, o, "add"));
      informer.on("update", (o) => handler(kind, o, "update"));
      informer.on("delete", (o) => handler(kind, o, "delete"));
    }
  }

  /** Starts every watch; resolves once each has listed its objects. */
  async start(): Promise<void> {
    for (const w of this.watched) this.keepAlive(w);
    await Promise.all(this.watched.map((w) => w.listed));
    this.synced = true;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** While not synced: the first watch still waiting for its first list, and why (its last error), in words. */
  waitingFor(): string | undefined {
    const w = this.watched.find((x) => !x.synced);
    if (!w) return undefined;
    const what = w.kind === "apps" ? "ModelApps" : w.kind;
    return w.lastError ? `cannot list ${what}: ${w.lastError}` : `listing ${what}`;
  }

  /** Starts an informer and restarts it after every error (a failed list or watch), with exponential backoff. */
  private keepAlive(w: Watched): void {
    const start = (): void => {
      if (!this.stopped) w.informer.start().catch(restart);
    };
    const restart = (err: unknown): void => {
      if (this.stopped) return;
      w.lastError = watchError(w.kind, err);
      this.logger.warn({ kind: w.kind, err: String(err), retryMs: w.backoffMs }, "watch failed; restarting");
      setTimeout(start, w.backoffMs).unref();
      w.backoffMs = Math.min(w.backoffMs * 2, MAX_BACKOFF_MS);
    };
    w.informer.on("error", restart);
    start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.watched.map((w) => w.informer.stop()));
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
