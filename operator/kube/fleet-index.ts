// Indexes over the watched caches, kept current by the watch events: an app's pods, its Jobs, the apps that share a
// model volume, and each app's parsed spec. A reconcile reads only its own app's objects through them, so its cost does
// not grow with the fleet (a scan of every app or pod of the namespace in each reconcile made a fleet's reconciles
// cost O(apps²): docs/decisions/0017-operator-cost-per-app.md).
import type { KubernetesObject, V1Job, V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { parseModelAppSpec, type ModelApp } from "../api/v1alpha1/modelapp.ts";
import { APP_LABEL } from "../api/v1alpha1/labels.ts";

export type ParsedSpec = ReturnType<typeof parseModelAppSpec>;

/** What the indexes need of an object (ModelApp's metadata types its timestamps apart from client-node's). */
type Named = { metadata?: { name?: string; namespace?: string } };

const nsOf = (o: Named): string => o.metadata?.namespace ?? "default";
const objectKey = (o: Named): string => `${nsOf(o)}/${o.metadata?.name ?? ""}`;

/** Objects grouped under a key (an app, a volume); an object moves when its key changes and leaves when deleted. */
export class GroupIndex<T extends Named> {
  private readonly groups = new Map<string, Map<string, T>>();
  private readonly groupOf = new Map<string, string>();
  private readonly keyOf: (obj: T) => string | undefined;

  constructor(keyOf: (obj: T) => string | undefined) {
    this.keyOf = keyOf;
  }

  set(obj: T): void {
    const id = objectKey(obj),
      key = this.keyOf(obj),
      old = this.groupOf.get(id);
    if (old !== undefined && old !== key) this.remove(id);
    if (key === undefined) return;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = new Map()));
    group.set(id, obj);
    this.groupOf.set(id, key);
  }

  delete(obj: T): void {
    this.remove(objectKey(obj));
  }

  private remove(id: string): void {
    const key = this.groupOf.get(id);
    if (key === undefined) return;
    this.groupOf.delete(id);
    const group = this.groups.get(key);
    group?.delete(id);
    if (group?.size === 0) this.groups.delete(key);
  }

  get(key: string): T[] {
    const group = this.groups.get(key);
    return group ? [...group.values()] : [];
  }
}

/** The uid of an object's controller (an app's uid names it alone: a new app of the same name has another). */
const controllerUid = (o: KubernetesObject): string | undefined =>
  (o.metadata?.ownerReferences ?? []).find((r: V1OwnerReference) => r.controller)?.uid;

export class FleetIndex {
  /** Parsed specs, per cached object: an update replaces the object, so a stale entry is never read. */
  private readonly specs = new WeakMap<object, ParsedSpec>();
  private readonly pods = new GroupIndex<V1Pod>((p) => {
    const app = p.metadata?.labels?.[APP_LABEL];
    return app ? `${nsOf(p)}/${app}` : undefined;
  });
  private readonly jobs = new GroupIndex<V1Job>(controllerUid);
  private readonly volumes = new GroupIndex<ModelApp>((a) => {
    const p = this.spec(a);
    return p.ok ? `${nsOf(a)}/${p.spec.modelVolume.name}` : undefined;
  });

  /** The app's spec, parsed once per version of the object. */
  spec(app: ModelApp): ParsedSpec {
    let parsed = this.specs.get(app);
    if (!parsed) this.specs.set(app, (parsed = parseModelAppSpec(app.spec)));
    return parsed;
  }

  /** Follows one watch event (a (re)list's objects arrive as adds and updates, its vanished ones as deletes). */
  observe(kind: "apps" | "pods" | "jobs" | (string & {}), obj: Named, event: "add" | "update" | "delete"): void {
    const index =
      kind === "pods" ? this.pods : kind === "jobs" ? this.jobs : kind === "apps" ? this.volumes : undefined;
    if (!index) return;
    if (event === "delete") index.delete(obj as never);
    else index.set(obj as never);
  }

  podsOf(namespace: string, app: string): V1Pod[] {
    return this.pods.get(`${namespace}/${app}`);
  }

  /** The Jobs an app (by its uid) controls. */
  jobsOf(appUid: string): V1Job[] {
    return this.jobs.get(appUid);
  }

  /** The apps of a namespace whose spec names the model volume. */
  volumeUsers(namespace: string, volume: string): ModelApp[] {
    return this.volumes.get(`${namespace}/${volume}`);
  }
}
