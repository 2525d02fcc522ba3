// Every request the operator sends to the API server outside its watches: server-side apply under one field manager,
// status and scale writes, events, existence checks and leases. Each request is counted (verb, resource, code) so the
// "no writes at steady state" promise can be measured.
import type { KubeConfig, KubernetesObject, V1Lease } from "@kubernetes/client-node";
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { API_VERSION, GROUP, KIND, PLURAL, VERSION, type ModelAppStatus } from "../api/v1alpha1/modelapp.ts";
import { FIELD_MANAGER } from "../render/labels.ts";
import { pooledApiClients } from "./api-clients.ts";

export type RequestCounter = (verb: string, resource: string, code: number) => void;

/**
 * How long one request may take. client-node sets no deadline: a request caught by an API server restart could hang
 * forever and hold its worker (all workers, in the fault test). A late one fails and its reconcile is retried.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/** `p`, or a rejection (code 0, a transport failure) once `ms` have passed. */
function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from the API server in ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const apply = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** The HTTP status of a client-node error (ApiException.code), or 0 for transport errors. */
export const statusOf = (err: unknown): number => {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "number" ? code : 0;
};

export interface EventInput {
  regarding: { apiVersion: string; kind: string; name: string; namespace: string; uid?: string };
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

export class KubeWriter {
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  private readonly batch: BatchV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly coordination: CoordinationV1Api;
  private readonly count: RequestCounter;
  private readonly component: string;
  private readonly instance: string;

  constructor(kc: KubeConfig, opts: { count: RequestCounter; instance: string }) {
    const client = pooledApiClients(kc);
    this.core = client(CoreV1Api);
    this.apps = client(AppsV1Api);
    this.batch = client(BatchV1Api);
    this.custom = client(CustomObjectsApi);
    this.coordination = client(CoordinationV1Api);
    this.count = opts.count;
    this.component = FIELD_MANAGER;
    this.instance = opts.instance;
  }

  private async counted<T>(verb: string, resource: string, fn: () => Promise<T>): Promise<T> {
    try {
      const r = await withDeadline(fn(), REQUEST_TIMEOUT_MS, `${verb} ${resource}`);
      this.count(verb, resource, 200);
      return r;
    } catch (err) {
      this.count(verb, resource, statusOf(err));
      throw err;
    }
  }

  /** Server-side apply (force: the operator owns these fields) of a Deployment, Service, ConfigMap, PVC or Job. */
  apply(obj: KubernetesObject & { metadata: { name: string; namespace: string } }): Promise<unknown> {
    const { name, namespace } = obj.metadata;
    const params = { name, namespace, body: obj, fieldManager: FIELD_MANAGER, force: true };
    switch (obj.kind) {
      case "Deployment":
        return this.counted("apply", "deployments", () => this.apps.patchNamespacedDeployment(params, apply));
      case "Service":
        return this.counted("apply", "services", () => this.core.patchNamespacedService(params, apply));
      case "ConfigMap":
        return this.counted("apply", "configmaps", () => this.core.patchNamespacedConfigMap(params, apply));
      case "PersistentVolumeClaim":
        return this.counted("apply", "persistentvolumeclaims", () =>
          this.core.patchNamespacedPersistentVolumeClaim(params, apply),
        );
      case "Job":
        return this.counted("apply", "jobs", () => this.batch.patchNamespacedJob(params, apply));
      default:
        throw new Error(`apply: unsupported kind ${obj.kind}`);
    }
  }

  /** Reads an object the caches do not show (it may exist without the operator's labels). undefined when absent. */
  async get(kind: string, namespace: string, name: string): Promise<KubernetesObject | undefined> {
    const read = (): Promise<KubernetesObject> => {
      switch (kind) {
        case "Deployment":
          return this.apps.readNamespacedDeployment({ name, namespace });
        case "Service":
          return this.core.readNamespacedService({ name, namespace });
        case "ConfigMap":
          return this.core.readNamespacedConfigMap({ name, namespace });
        case "PersistentVolumeClaim":
          return this.core.readNamespacedPersistentVolumeClaim({ name, namespace });
        case "Job":
          return this.batch.readNamespacedJob({ name, namespace });
        default:
          throw new Error(`get: unsupported kind ${kind}`);
      }
    };
    try {
      return await this.counted("get", kind.toLowerCase(), read);
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /** Deletes a Job with its pods (in the background); one already gone is fine. */
  async deleteJob(namespace: string, name: string): Promise<void> {
    try {
      await this.counted("delete", "jobs", () =>
        this.batch.deleteNamespacedJob({ name, namespace, propagationPolicy: "Background" }),
      );
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  /** Writes a ModelApp's whole status (server-side apply on the status subresource). */
  applyStatus(namespace: string, name: string, status: ModelAppStatus): Promise<unknown> {
    const body = { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, status };
    return this.counted("apply", "modelapps/status", () =>
      this.custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body,
          fieldManager: FIELD_MANAGER,
          force: true,
        },
        apply,
      ),
    );
  }

  /** Sets a ModelApp's desired replicas through its scale subresource (as `kubectl scale` does). */
  scale(namespace: string, name: string, replicas: number): Promise<unknown> {
    return this.counted("patch", "modelapps/scale", () =>
      this.custom.patchNamespacedCustomObjectScale(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body: { spec: { replicas } },
          fieldManager: FIELD_MANAGER,
        },
        mergePatch,
      ),
    );
  }

  /** Records an Event about an object (best effort: a failed event never fails a reconcile). */
  async event(e: EventInput, now: Date): Promise<void> {
    try {
      await this.counted("create", "events", () =>
        this.core.createNamespacedEvent({
          namespace: e.regarding.namespace,
          body: {
            metadata: { generateName: `${e.regarding.name}.` },
            involvedObject: { ...e.regarding },
            type: e.type,
            reason: e.reason,
            message: e.message.slice(0, 1024),
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
            source: { component: this.component },
            reportingComponent: this.component,
            reportingInstance: this.instance,
          },
        }),
      );
    } catch {
      /* the namespace may be going away; events are advisory */
    }
  }

  readLease(namespace: string, name: string): Promise<V1Lease> {
    return this.counted("get", "leases", () => this.coordination.readNamespacedLease({ name, namespace }));
  }

  createLease(namespace: string, body: V1Lease): Promise<V1Lease> {
    return this.counted("create", "leases", () => this.coordination.createNamespacedLease({ namespace, body }));
  }

  /** Replaces a lease; fails with 409 when someone else changed it since it was read (optimistic concurrency). */
  replaceLease(namespace: string, name: string, body: V1Lease): Promise<V1Lease> {
    return this.counted("update", "leases", () => this.coordination.replaceNamespacedLease({ name, namespace, body }));
  }
}
