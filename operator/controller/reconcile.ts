// One reconcile of one ModelApp: read it from the cache, render what it needs (pure), apply only what differs from
// what is live, compute the status (pure), write it once and only when it changed. An app at zero replicas whose model
// is not in its volume yet gets a model cache Job (render/model-cache-job.ts), deleted once the model is there, or when
// a request wakes the app first (its replica's init container takes over; pulls into one volume take turns).
// Objects are garbage collected through owner references, so deletion needs no finalizer. Objects that exist but are
// not the app's are never adopted: the app reports ResourceExists and a Warning event names them.
import type {
  KubernetesObject,
  V1Deployment,
  V1Job,
  V1OwnerReference,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import type { Logger } from "../../server/common/logger.ts";
import { CONDITION, REASON, findCondition } from "../api/v1alpha1/conditions.ts";
import { API_VERSION, KIND, type ModelApp, type ModelAppStatus } from "../api/v1alpha1/modelapp.ts";
import type { OperatorConfig } from "../config.ts";
import { canonicalJson } from "../render/hash.ts";
import { renderApp, type RenderedObject } from "../render/index.ts";
import { renderModelCacheJob } from "../render/model-cache-job.ts";
import { MANAGED_BY, SPEC_HASH_ANNOTATION } from "../render/labels.ts";
import type { VolumeUser } from "../render/pvc.ts";
import { keepAllocatedClusterIp } from "../render/service.ts";
import { InvalidSpecError, resolveApp, type ResolvedApp } from "../render/resolve.ts";
import type { Caches, Cache } from "../kube/caches.ts";
import type { FleetIndex } from "../kube/fleet-index.ts";
import type { EventInput, KubeWriter } from "../kube/writer.ts";
import { isApplied } from "./compare.ts";
import { computeStatus, isCachePod, type CacheJob } from "./status.ts";

export type ReconcileResult = "success" | "invalid" | "conflict" | "gone";

export interface ReconcileDeps {
  caches: Caches;
  /** The app's own pods, Jobs and volume sharers, without a scan of the namespace. */
  index: FleetIndex;
  writer: Pick<KubeWriter, "apply" | "get" | "applyStatus" | "event" | "deleteJob">;
  config: OperatorConfig;
  logger: Logger;
  now: () => Date;
}

const isControlledBy = (obj: KubernetesObject, uid: string | undefined): boolean =>
  (obj.metadata?.ownerReferences ?? []).some((r: V1OwnerReference) => r.controller === true && r.uid === uid);

const isManaged = (obj: KubernetesObject): boolean =>
  obj.metadata?.labels?.["app.kubernetes.io/managed-by"] === MANAGED_BY;

export const appKey = (namespace: string, name: string): string => `${namespace}/${name}`;

export function parseKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The apps of a namespace that name a model volume, as the PVC renderer needs them. */
function volumeUsers(index: FleetIndex, namespace: string, volume: string): VolumeUser[] {
  const users: VolumeUser[] = [];
  for (const a of index.volumeUsers(namespace, volume)) {
    const parsed = index.spec(a);
    if (a.metadata.deletionTimestamp || !a.metadata.uid || !parsed.ok) continue;
    const created = a.metadata.creationTimestamp;
    users.push({
      name: a.metadata.name,
      namespace,
      uid: a.metadata.uid,
      creationTimestamp: created instanceof Date ? created.toISOString() : String(created ?? ""),
      volume: parsed.spec.modelVolume,
    });
  }
  return users;
}

function cacheFor(caches: Caches, kind: string): Cache<KubernetesObject> {
  switch (kind) {
    case "Deployment":
      return caches.deployments as Cache<KubernetesObject>;
    case "Service":
      return caches.services as Cache<KubernetesObject>;
    case "ConfigMap":
      return caches.configMaps as Cache<KubernetesObject>;
    case "PersistentVolumeClaim":
      return caches.claims as Cache<KubernetesObject>;
    case "Job":
      return caches.jobs as Cache<KubernetesObject>;
    default:
      throw new Error(`no cache for ${kind}`);
  }
}

/** Where a Job is: running, or ended (its Complete or Failed condition). */
function jobState(job: V1Job): CacheJob["state"] {
  const ended = (type: string) => (job.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");
  return ended("Complete") ? "complete" : ended("Failed") ? "failed" : "running";
}

/** The Job a pod belongs to (the job controller's label; the legacy one on older clusters). */
const jobOfPod = (pod: V1Pod): string | undefined =>
  pod.metadata?.labels?.["batch.kubernetes.io/job-name"] ?? pod.metadata?.labels?.["job-name"];

const podHash = (d: KubernetesObject | undefined): string | undefined =>
  (d as V1Deployment | undefined)?.spec?.template?.metadata?.annotations?.[SPEC_HASH_ANNOTATION];

class Reconciler {
  private readonly d: ReconcileDeps;
  private readonly app: ModelApp;
  private readonly events: EventInput[] = [];
  /** Objects this reconcile created, for one Created event. */
  private readonly created: string[] = [];
  conflict: string | undefined;

  constructor(d: ReconcileDeps, app: ModelApp) {
    this.d = d;
    this.app = app;
  }

  private event(type: EventInput["type"], reason: string, message: string): void {
    const { name, namespace = "default", uid } = this.app.metadata;
    this.events.push({
      regarding: { apiVersion: API_VERSION, kind: KIND, name, namespace, ...(uid ? { uid } : {}) },
      type,
      reason,
      message,
    });
  }

  /**
   * The live object (cache first; an API read on a miss, since objects without the operator's labels are not cached).
   */
  private async live(obj: RenderedObject): Promise<KubernetesObject | undefined> {
    const { name, namespace } = obj.metadata;
    return (
      cacheFor(this.d.caches, obj.kind).get(name, namespace) ?? (await this.d.writer.get(obj.kind, namespace, name))
    );
  }

  async applyVolume(claim: RenderedObject): Promise<void> {
    const live = await this.live(claim);
    // A claim the operator did not create (a pre-made volume) is used as it is.
    if (live && !isManaged(live)) return;
    if (live && isApplied(live, claim)) return;
    await this.d.writer.apply(claim as KubernetesObject & RenderedObject);
    if (!live) this.created.push(`model volume ${claim.metadata.name}`);
  }

  async applyOwned(rendered: RenderedObject): Promise<void> {
    const live = await this.live(rendered);
    const obj =
      rendered.kind === "Service"
        ? keepAllocatedClusterIp(rendered as RenderedObject & { spec: { clusterIP?: string } }, live as V1Service)
        : rendered;
    if (live && !isControlledBy(live, this.app.metadata.uid)) {
      this.conflict = `${obj.kind} ${obj.metadata.name} already exists and is not managed by this ModelApp; delete or rename it`;
      return;
    }
    if (live && isApplied(live, obj)) return;
    await this.d.writer.apply(obj as KubernetesObject & RenderedObject);
    if (!live) this.created.push(`${obj.kind} ${obj.metadata.name}`);
    else if (obj.kind === "Deployment" && podHash(live) !== podHash(obj))
      this.event("Normal", "RollingUpdate", `spec changed: rolling the pods of Deployment ${obj.metadata.name}`);
  }

  /**
   * The status the cluster shows now (pure: no events). `cacheJob`: the current model cache Job; only its pods speak
   * for the model (those of a Job of an earlier spec, going away, say nothing of this one).
   */
  status(resolved: ResolvedApp | { invalid: string }, cacheJob?: CacheJob): ModelAppStatus {
    const { name, namespace = "default" } = this.app.metadata;
    const deployment = this.d.caches.deployments.get(name, namespace);
    const pods = this.d.index
      .podsOf(namespace, name)
      .filter((p) => !isCachePod(p) || (jobOfPod(p) === cacheJob?.name && !p.metadata?.deletionTimestamp));
    return computeStatus({
      app: this.app,
      resolved,
      observed: {
        ...(deployment && isControlledBy(deployment, this.app.metadata.uid) ? { deployment } : {}),
        pods: "invalid" in resolved ? [] : pods,
        ...(cacheJob ? { cacheJob } : {}),
        ...(this.conflict ? { conflict: this.conflict } : {}),
      },
      gatewayUrl: this.d.config.gatewayUrl,
      now: this.d.now(),
    });
  }

  /**
   * The model cache Job: made for an app at zero replicas whose model is not cached (and kept when it fails, with the
   * failure, until its pod template changes or someone deletes it to try again); deleted once the model is cached,
   * when the spec asks for another (a Job's pods cannot change), and when a request wakes the app before it is done
   * (the replica's init container takes over, resuming the download: a Job that cannot finish never keeps an app down).
   */
  async syncCacheJob(resolved: ResolvedApp, job: RenderedObject, owned: readonly V1Job[], cached: boolean) {
    const namespace = job.metadata.namespace;
    for (const j of owned) {
      const stale =
        cached || j.metadata?.name !== job.metadata.name || (resolved.replicas > 0 && jobState(j) === "running");
      if (stale && !j.metadata?.deletionTimestamp) await this.d.writer.deleteJob(namespace, j.metadata!.name!);
    }
    if (!cached && resolved.replicas === 0 && !owned.some((j) => j.metadata?.name === job.metadata.name))
      await this.applyOwned(job);
  }

  observeAndReport(resolved: ResolvedApp | { invalid: string }, cacheJob?: CacheJob): ModelAppStatus {
    const status = this.status(resolved, cacheJob);
    const before = findCondition(this.app.status?.conditions, CONDITION.Ready),
      after = findCondition(status.conditions, CONDITION.Ready);
    if (after && (before?.status !== after.status || before.reason !== after.reason)) {
      const normal =
        after.status === "True" ||
        after.reason === REASON.Starting ||
        after.reason === REASON.Pulling ||
        after.reason === REASON.Pending;
      // A new app's first not-ready state is what its Created event says: announced, it was one more Event per app.
      const first = !before && this.created.length > 0 && normal && after.status !== "True";
      if (!first) this.event(normal ? "Normal" : "Warning", after.reason, after.message);
    }
    return status;
  }

  async writeStatus(status: ModelAppStatus): Promise<boolean> {
    if (canonicalJson(this.app.status ?? {}) === canonicalJson(status)) return false;
    await this.d.writer.applyStatus(this.app.metadata.namespace ?? "default", this.app.metadata.name, status);
    return true;
  }

  /**
   * Writes the status (when it changed) and sends the events, at once: they do not depend on each other, and in
   * sequence they were one more API round trip per reconcile for a worker to wait on. True when the status was written.
   */
  async report(resolved: ResolvedApp | { invalid: string }, cacheJob?: CacheJob): Promise<boolean> {
    const status = this.observeAndReport(resolved, cacheJob);
    const [written] = await Promise.all([this.writeStatus(status), this.flushEvents()]);
    return written;
  }

  private async flushEvents(): Promise<void> {
    if (this.created.length) this.event("Normal", "Created", `created ${this.created.join(", ")}`);
    const now = this.d.now();
    await Promise.all(this.events.map((e) => this.d.writer.event(e, now)));
  }
}

export async function reconcile(key: string, d: ReconcileDeps): Promise<ReconcileResult> {
  const { namespace, name } = parseKey(key);
  const app = d.caches.apps.get(name, namespace);
  if (!app || app.metadata.deletionTimestamp) return "gone";
  const r = new Reconciler(d, app);
  let resolved: ResolvedApp;
  try {
    resolved = resolveApp(app, d.config);
  } catch (e) {
    if (!(e instanceof InvalidSpecError)) throw e;
    d.logger.info({ namespace, name, generation: app.metadata.generation, reason: e.message }, "invalid spec");
    await r.report({ invalid: e.message });
    return "invalid";
  }
  const cacheJob = renderModelCacheJob(resolved, d.config);
  const jobs = app.metadata.uid ? d.index.jobsOf(app.metadata.uid) : [];
  const current = jobs.find((j) => j.metadata?.name === cacheJob.metadata.name && !j.metadata.deletionTimestamp);
  const job: CacheJob | undefined = current && { name: cacheJob.metadata.name, state: jobState(current) };
  const plan = renderApp(resolved, d.config, volumeUsers(d.index, namespace, resolved.spec.modelVolume.name));
  // Two waves of independent requests: what the pods mount (volume, Modelfile ConfigMap), then the Deployment and
  // Service.
  const mounted = plan.owned.filter((o) => o.kind === "ConfigMap"),
    rest = plan.owned.filter((o) => o.kind !== "ConfigMap");
  await Promise.all([r.applyVolume(plan.volume), ...mounted.map((o) => r.applyOwned(o))]);
  await Promise.all(rest.map((o) => r.applyOwned(o)));
  if (!r.conflict) {
    const cached = findCondition(r.status(resolved, job).conditions, CONDITION.ModelCached)?.status === "True";
    await r.syncCacheJob(resolved, cacheJob, jobs, cached);
  }
  if (r.conflict) d.logger.warn({ namespace, name, conflict: r.conflict }, "not adopting an existing object");
  if (await r.report(resolved, job))
    d.logger.debug({ namespace, name, generation: app.metadata.generation }, "status written");
  return r.conflict ? "conflict" : "success";
}
