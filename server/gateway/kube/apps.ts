// Apps and their pods from the cluster: a watch of ModelApps and one of the apps' EndpointSlices (the operator's
// Services carry app.kubernetes.io/managed-by=gantry-operator, and the EndpointSlice controller copies a Service's
// labels onto its slices). A change reaches the gateway as soon as the watch event does; no request reads the API.
import {
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1EndpointSlice,
} from "@kubernetes/client-node";
import { CONDITION, REASON } from "../../../operator/api/v1alpha1/conditions.ts";
import { MANAGED_SELECTOR } from "../../../operator/api/v1alpha1/labels.ts";
import {
  GROUP,
  parseModelAppSpec,
  PLURAL,
  VERSION,
  AUTH_MODES,
  type AuthMode,
  type ModelApp,
} from "../../../operator/api/v1alpha1/modelapp.ts";
import { servedModelOf } from "../../../operator/api/v1alpha1/spec-checks.ts";
import { KubeWatch, resourcePath } from "../../common/kube-watch.ts";
import type { Logger } from "../../common/logger.ts";
import type { AppInfo, AppSource, Endpoint } from "../ports.ts";

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** Ready reasons after which the app cannot become ready without a change to it: answered with 503, not held. */
const TERMINAL: ReadonlySet<string> = new Set([
  REASON.InvalidSpec,
  REASON.ModelNotFound,
  REASON.InsufficientGPU,
  REASON.Unschedulable,
  REASON.ResourceExists,
  REASON.ServerFailed,
]);

/** What the gateway needs of a ModelApp. Pure. */
export function appInfoOf(app: ModelApp): AppInfo {
  const org = app.metadata.namespace ?? "default";
  const parsed = parseModelAppSpec(app.spec);
  const rawAuth = (app.spec as { auth?: unknown } | undefined)?.auth;
  const auth: AuthMode = parsed.ok
    ? parsed.spec.auth
    : AUTH_MODES.includes(rawAuth as AuthMode)
      ? (rawAuth as AuthMode)
      : "private";
  const ready = app.status?.conditions?.find((c) => c.type === CONDITION.Ready);
  const current =
    ready && (ready.observedGeneration === undefined || ready.observedGeneration === app.metadata.generation);
  const failed = !parsed.ok
    ? { reason: REASON.InvalidSpec, message: parsed.message }
    : current && ready.status === "False" && TERMINAL.has(ready.reason)
      ? { reason: ready.reason, message: ready.message }
      : undefined;
  const servedModel = parsed.ok ? servedModelOf(app.metadata.name, parsed.spec) : undefined;
  return {
    org,
    name: app.metadata.name,
    auth,
    uid: app.metadata.uid ?? `${org}/${app.metadata.name}`,
    ...(failed ? { failed } : {}),
    ...(parsed.ok ? { model: parsed.spec.model } : {}),
    ...(servedModel ? { servedModel } : {}),
    ...(parsed.ok ? { loadBalancing: parsed.spec.loadBalancing } : {}),
    ...(app.status?.url ? { url: app.status.url } : {}),
    ...(ready ? { ready: { status: ready.status, reason: ready.reason, message: ready.message } } : {}),
    ...(app.status?.replicas !== undefined ? { replicas: app.status.replicas } : {}),
    ...(app.status?.readyReplicas !== undefined ? { readyReplicas: app.status.readyReplicas } : {}),
    ...(parsed.ok
      ? { minReplicas: parsed.spec.scaling.minReplicas, maxReplicas: parsed.spec.scaling.maxReplicas }
      : {}),
    conditions: (app.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      ...(c.lastTransitionTime ? { lastTransitionTime: String(c.lastTransitionTime) } : {}),
    })),
    ...((app.metadata as { deletionTimestamp?: unknown }).deletionTimestamp ? { deleting: true } : {}),
  };
}

/** The endpoints of one EndpointSlice (its "http" port, else its first). Pure. */
export function endpointsOf(slice: V1EndpointSlice): Endpoint[] {
  const port = (slice.ports ?? []).find((p) => p.name === "http") ?? slice.ports?.[0];
  if (!port?.port || (slice.addressType !== "IPv4" && slice.addressType !== "IPv6")) return [];
  const out: Endpoint[] = [];
  for (const ep of slice.endpoints ?? []) {
    const ip = ep.addresses?.[0];
    if (!ip) continue;
    const host = slice.addressType === "IPv6" ? `[${ip}]` : ip;
    const id = `${host}:${port.port}`;
    const ready = ep.conditions?.ready !== false && ep.conditions?.terminating !== true;
    const pod = ep.targetRef?.kind === "Pod" ? ep.targetRef.name : undefined;
    out.push({ id, origin: `http://${id}`, ready, ...(pod ? { pod } : {}) });
  }
  return out;
}

export class KubeApps implements AppSource {
  private readonly apps: KubeWatch<KubernetesObject>;
  private readonly slices: KubeWatch<V1EndpointSlice>;
  private readonly infos = new Map<string, AppInfo>();
  /** org/app → slice name → endpoints */
  private readonly eps = new Map<string, Map<string, Endpoint[]>>();
  private readonly merged = new Map<string, Endpoint[]>();
  private readonly listeners: Array<(org: string, name: string) => void> = [];
  private isSynced = false;

  constructor(kc: KubeConfig, o: { namespace?: string; logger: Logger }) {
    const custom = kc.makeApiClient(CustomObjectsApi),
      discovery = kc.makeApiClient(DiscoveryV1Api);
    const ns = o.namespace;
    this.apps = new KubeWatch<KubernetesObject>(kc, {
      name: "modelapps",
      path: resourcePath(`/apis/${GROUP}/${VERSION}`, PLURAL, ns),
      list: (page) =>
        ns
          ? custom.listNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace: ns,
              plural: PLURAL,
              ...page,
            })
          : custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, ...page }),
      logger: o.logger,
    });
    this.slices = new KubeWatch<V1EndpointSlice>(kc, {
      name: "endpointslices",
      path: resourcePath("/apis/discovery.k8s.io/v1", "endpointslices", ns),
      list: (page) =>
        ns
          ? discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: MANAGED_SELECTOR, ...page })
          : discovery.listEndpointSliceForAllNamespaces({ labelSelector: MANAGED_SELECTOR, ...page }),
      labelSelector: MANAGED_SELECTOR,
      logger: o.logger,
    });
    this.apps.on((obj, event) => {
      const app = obj as ModelApp;
      const org = app.metadata.namespace ?? "default",
        k = `${org}/${app.metadata.name}`;
      if (event === "delete" || app.metadata.deletionTimestamp) this.infos.delete(k);
      else this.infos.set(k, appInfoOf(app));
      this.changed(org, app.metadata.name);
    });
    this.slices.on((slice, event) => {
      const org = slice.metadata?.namespace ?? "default",
        svc = slice.metadata?.labels?.[SERVICE_NAME_LABEL],
        name = slice.metadata?.name ?? "";
      if (!svc) return;
      const k = `${org}/${svc}`;
      let bySlice = this.eps.get(k);
      if (!bySlice) {
        bySlice = new Map();
        this.eps.set(k, bySlice);
      }
      if (event === "delete") bySlice.delete(name);
      else bySlice.set(name, endpointsOf(slice));
      const all = [...bySlice.values()].flat();
      if (all.length) this.merged.set(k, all);
      else {
        this.merged.delete(k);
        if (bySlice.size === 0) this.eps.delete(k);
      }
      this.changed(org, svc);
    });
  }

  get synced(): boolean {
    return this.isSynced;
  }

  async start(): Promise<void> {
    await Promise.all([this.apps.start(), this.slices.start()]);
    this.isSynced = true;
  }

  async stop(): Promise<void> {
    await Promise.all([this.apps.stop(), this.slices.stop()]);
  }

  get(org: string, name: string): AppInfo | undefined {
    return this.infos.get(`${org}/${name}`);
  }

  list(org: string): AppInfo[] {
    return [...this.infos.values()].filter((a) => a.org === org);
  }

  endpoints(org: string, name: string): readonly Endpoint[] {
    return this.merged.get(`${org}/${name}`) ?? [];
  }

  /** Every pod origin known (the proxy closes connection pools of pods that are gone). */
  origins(): Set<string> {
    return new Set([...this.merged.values()].flat().map((e) => e.origin));
  }

  onChange(fn: (org: string, name: string) => void): void {
    this.listeners.push(fn);
  }

  private changed(org: string, name: string): void {
    for (const l of this.listeners) l(org, name);
  }
}
