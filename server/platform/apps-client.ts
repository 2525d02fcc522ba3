// The platform commands' requests to the cluster: ModelApps (server-side apply under the CLI's own field manager,
// read, list, delete, scaling bounds) and what shows how an app is doing (its Deployment's rollout, its pods, their
// logs). Every failure becomes a PlatformError with a sentence from kubeErrorMessage.
import type { Writable } from "node:stream";
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  Log,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
} from "@kubernetes/client-node";
import { APP_LABEL } from "../../operator/api/v1alpha1/labels.ts";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../../operator/api/v1alpha1/modelapp.ts";
import { isNotFound, kubeErrorMessage, PlatformError, type KubeTarget } from "./kube-target.ts";

/** The field manager of `gantry deploy`'s server-side applies (the operator's is gantry-operator). */
export const CLI_FIELD_MANAGER = "gantry-cli";

const applyPatch = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

export class AppsClient {
  readonly target: KubeTarget;
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;

  constructor(target: KubeTarget) {
    this.target = target;
    this.custom = target.kc.makeApiClient(CustomObjectsApi);
    this.core = target.kc.makeApiClient(CoreV1Api);
    this.apps = target.kc.makeApiClient(AppsV1Api);
  }

  get org(): string {
    return this.target.org;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw new PlatformError(kubeErrorMessage(e, this.target, what));
    }
  }

  private ref(name: string) {
    return { group: GROUP, version: VERSION, namespace: this.org, plural: PLURAL, name };
  }

  /** Server-side apply of a whole ModelApp: fields the CLI owned and now leaves out are removed (as kubectl apply). */
  apply(manifest: ModelApp): Promise<ModelApp> {
    const name = manifest.metadata.name;
    return this.call(`apply ModelApp ${this.org}/${name}`, async () => {
      const body = { ...manifest, metadata: { ...manifest.metadata, namespace: this.org } };
      const params = { ...this.ref(name), body, fieldManager: CLI_FIELD_MANAGER, force: true };
      return (await this.custom.patchNamespacedCustomObject(params, applyPatch)) as ModelApp;
    });
  }

  /** The app, or undefined when the org has none of that name. */
  async get(name: string): Promise<ModelApp | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject(this.ref(name))) as ModelApp;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw new PlatformError(kubeErrorMessage(e, this.target, `get ModelApp ${this.org}/${name}`));
    }
  }

  /** The app, or a PlatformError that names the org's apps. */
  async mustGet(name: string): Promise<ModelApp> {
    const app = await this.get(name);
    if (app) return app;
    const names = (await this.list()).map((a) => a.metadata.name);
    throw new PlatformError(
      `no app "${name}" in org ${this.org} (${names.length ? `it has: ${names.join(", ")}` : "it has no apps"})`,
    );
  }

  list(): Promise<ModelApp[]> {
    return this.call(`list the ModelApps of org ${this.org}`, async () => {
      const r = (await this.custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: this.org,
        plural: PLURAL,
      })) as { items: ModelApp[] };
      return r.items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    });
  }

  /** Deletes the app (its pods, Service and ConfigMap go with it; a shared model volume stays while others use it). */
  async delete(name: string): Promise<boolean> {
    try {
      await this.custom.deleteNamespacedCustomObject(this.ref(name));
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw new PlatformError(kubeErrorMessage(e, this.target, `delete ModelApp ${this.org}/${name}`));
    }
  }

  /** Sets scaling bounds with a merge patch (not the apply: that would drop every other field the CLI applied). */
  setScaling(name: string, scaling: { minReplicas?: number; maxReplicas?: number }): Promise<ModelApp> {
    return this.call(`scale ModelApp ${this.org}/${name}`, async () => {
      const params = { ...this.ref(name), body: { spec: { scaling } }, fieldManager: `${CLI_FIELD_MANAGER}-scale` };
      return (await this.custom.patchNamespacedCustomObject(params, mergePatch)) as ModelApp;
    });
  }

  /** The app's Deployment (named after it and owned by it), or undefined. */
  async deployment(app: ModelApp): Promise<V1Deployment | undefined> {
    try {
      const d = await this.apps.readNamespacedDeployment({ name: app.metadata.name, namespace: this.org });
      return d.metadata?.ownerReferences?.some((o) => o.uid === app.metadata.uid) ? d : undefined;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw new PlatformError(
        kubeErrorMessage(e, this.target, `get the Deployment of ${this.org}/${app.metadata.name}`),
      );
    }
  }

  /**
   * The app's server pods (status.selector, written by the operator), oldest first; with `modelCache`, its model cache
   * Job's pod too (the app's label without the servers' managed-by).
   */
  pods(app: ModelApp, opts: { modelCache?: boolean } = {}): Promise<V1Pod[]> {
    const selector = opts.modelCache ? `${APP_LABEL}=${app.metadata.name}` : app.status?.selector;
    if (!selector) return Promise.resolve([]);
    return this.call(`list the pods of ${this.org}/${app.metadata.name}`, async () => {
      const r = await this.core.listNamespacedPod({ namespace: this.org, labelSelector: selector });
      return r.items.sort(
        (a, b) =>
          new Date(a.metadata?.creationTimestamp ?? 0).getTime() -
          new Date(b.metadata?.creationTimestamp ?? 0).getTime(),
      );
    });
  }

  /** The last lines of a container's log ("" when it has none yet). */
  async logTail(pod: string, container: string, lines: number): Promise<string> {
    try {
      return await this.core.readNamespacedPodLog({ name: pod, namespace: this.org, container, tailLines: lines });
    } catch {
      return ""; // not started yet, or gone: the log is a nicety here
    }
  }

  /** Streams a container's log into `out`; resolves when the stream ends (with follow: when the container stops). */
  async streamLog(
    pod: string,
    container: string,
    out: Writable,
    opts: { follow: boolean; tailLines?: number | undefined },
  ): Promise<AbortController> {
    return this.call(`logs of ${this.org}/${pod}`, () =>
      new Log(this.target.kc).log(this.org, pod, container, out, {
        follow: opts.follow,
        ...(opts.tailLines !== undefined ? { tailLines: opts.tailLines } : {}),
      }),
    );
  }
}
