// reconcile() against in-memory caches and a fake writer that records every write (kubernetes/sample-controller's
// fixture style): the exact writes of a first reconcile, none at steady state, an invalid spec, an object not ours, the
// model cache Job of an app at zero replicas.
// The same paths against a real kube-apiserver: test/integration/operator/reconcile.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { silentLogger } from "../../../../server/common/logger.ts";
import type { ModelApp, ModelAppStatus } from "../../../../operator/api/v1alpha1/modelapp.ts";
import { reconcile, type ReconcileDeps } from "../../../../operator/controller/reconcile.ts";
import type { Cache, CacheName, Caches } from "../../../../operator/kube/caches.ts";
import { FleetIndex } from "../../../../operator/kube/fleet-index.ts";
import type { EventInput } from "../../../../operator/kube/writer.ts";
import { config, modelApp } from "../fixtures.ts";

/** An informer cache over a list of objects. */
function cache<T>(objects: T[] = []): Cache<T> {
  const meta = (o: T) => (o as KubernetesObject).metadata;
  return {
    get: (name: string, namespace?: string) =>
      objects.find((o) => meta(o)?.name === name && meta(o)?.namespace === namespace),
    list: (namespace?: string) => objects.filter((o) => namespace === undefined || meta(o)?.namespace === namespace),
  } as Cache<T>;
}

type Action =
  | { verb: "apply"; object: KubernetesObject }
  | { verb: "delete"; name: string }
  | { verb: "applyStatus"; key: string; status: ModelAppStatus }
  | { verb: "event"; event: EventInput };

function fixture(app: ModelApp, live: KubernetesObject[] = []) {
  const actions: Action[] = [];
  const of = <T>(kind: string) => cache(live.filter((o) => o.kind === kind) as T[]);
  const caches: Caches = {
    apps: cache([app]),
    deployments: of("Deployment"),
    services: of("Service"),
    configMaps: of("ConfigMap"),
    claims: of("PersistentVolumeClaim"),
    pods: of("Pod"),
    jobs: of("Job"),
  };
  const index = new FleetIndex();
  for (const kind of ["apps", "pods", "jobs"] as const satisfies CacheName[])
    for (const o of caches[kind].list()) index.observe(kind, o, "add");
  const deps: ReconcileDeps = {
    caches,
    index,
    writer: {
      apply: async (object) => void actions.push({ verb: "apply", object }),
      get: async () => undefined,
      applyStatus: async (namespace, name, status) =>
        void actions.push({ verb: "applyStatus", key: `${namespace}/${name}`, status }),
      event: async (event) => void actions.push({ verb: "event", event }),
      deleteJob: async (_namespace, name) => void actions.push({ verb: "delete", name }),
    },
    config: config(),
    logger: silentLogger,
    now: () => new Date("2026-01-02T00:00:00Z"),
  };
  return { deps, actions };
}

const applied = (actions: Action[]) =>
  actions.flatMap((a) => (a.verb === "apply" ? [`${a.object.kind} ${a.object.metadata?.name}`] : [])).sort();
const statuses = (actions: Action[]) => actions.flatMap((a) => (a.verb === "applyStatus" ? [a.status] : []));
const events = (actions: Action[]) =>
  actions.flatMap((a) => (a.verb === "event" ? [`${a.event.type} ${a.event.reason}`] : []));
const ready = (s: ModelAppStatus | undefined) => s?.conditions?.find((c) => c.type === "Ready");
const cachedCondition = (s: ModelAppStatus | undefined) => s?.conditions?.find((c) => c.type === "ModelCached");
const deleted = (actions: Action[]) => actions.flatMap((a) => (a.verb === "delete" ? [a.name] : []));
const jobOf = (actions: Action[]) =>
  actions.flatMap((a) => (a.verb === "apply" && a.object.kind === "Job" ? [a.object] : []))[0] as
    (KubernetesObject & { spec: { template: { spec: { containers: Array<{ name: string }> } } } }) | undefined;
const deploymentReplicas = (actions: Action[]) =>
  actions.flatMap((a) =>
    a.verb === "apply" && a.object.kind === "Deployment"
      ? [(a.object as { spec: { replicas: number } }).spec.replicas]
      : [],
  )[0];

/** The model cache Job's pod, its prepare container running or ended with `exitCode` and the report. */
const cachePod = (job: KubernetesObject, state: "running" | { exitCode: number; message: string }) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: `${job.metadata!.name}-x7k2p`,
    namespace: "acme",
    labels: {
      ...(job as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata
        .labels,
      "batch.kubernetes.io/job-name": job.metadata!.name!, // as the job controller labels its pods
    },
  },
  status: {
    containerStatuses: [
      {
        name: "prepare",
        ready: false,
        restartCount: 0,
        image: "gantry",
        imageID: "",
        state: state === "running" ? { running: {} } : { terminated: state },
      },
    ],
  },
});
const finished = (job: KubernetesObject, type: "Complete" | "Failed") => ({
  ...job,
  status: { conditions: [{ type, status: "True" }] },
});
/** The first reconcile of a new app at zero: its model cache Job, the other objects it applied, and its writes. */
async function firstReconcile() {
  const first = fixture(modelApp());
  await reconcile("acme/chat", first.deps);
  const job = jobOf(first.actions)!;
  const live = first.actions.flatMap((a) => (a.verb === "apply" && a.object.kind !== "Job" ? [a.object] : []));
  return { job, live, first };
}

/** A Job that succeeded, and its pod's report of the model it pulled. */
const pulled = (job: KubernetesObject, digest: string) => [
  finished(job, "Complete"),
  cachePod(job, { exitCode: 0, message: JSON.stringify({ model: "hf.co/org/repo:Q4_K_M", digest }) }),
];

/** A status whose model is cached (an app that has run a replica before). */
const cachedStatus = (): ModelAppStatus => ({
  modelRef: "hf.co/org/repo:Q4_K_M",
  conditions: [
    {
      type: "ModelCached",
      status: "True",
      reason: "Cached",
      message: "cached",
      lastTransitionTime: "2026-01-01T00:00:00Z",
      observedGeneration: 1,
    },
  ],
});

test("a new app at zero replicas: its volume, Deployment, Service and model cache Job; not Ready before its model is in", async () => {
  const { deps, actions } = fixture(modelApp());
  assert.equal(await reconcile("acme/chat", deps), "success");
  const job = jobOf(actions)!;
  assert.match(job.metadata!.name!, /^chat-cache-[0-9a-f]{6}$/);
  assert.deepEqual(
    applied(actions),
    ["Deployment chat", "PersistentVolumeClaim models", "Service chat", `Job ${job.metadata!.name}`].sort(),
  );
  assert.deepEqual(
    job.spec.template.spec.containers.map((c) => c.name),
    ["prepare"],
  );
  assert.equal(statuses(actions).length, 1);
  assert.equal(statuses(actions)[0]?.observedGeneration, 1);
  assert.deepEqual(
    [ready(statuses(actions)[0])?.status, ready(statuses(actions)[0])?.reason],
    ["False", "Pending"],
    "ready to be woken only once its model is in the volume",
  );
  assert.deepEqual(
    events(actions),
    ["Normal Created"],
    "its first state, Pending, is what Created says: no Event of its own",
  );
});

test("the model cache Job: Pulling while it runs, then cached, Ready at zero, deleted", async () => {
  const { job, live, first } = await firstReconcile();

  const running = fixture({ ...modelApp(), status: statuses(first.actions)[0] }, [
    ...live,
    job,
    cachePod(job, "running"),
  ] as KubernetesObject[]);
  await reconcile("acme/chat", running.deps);
  const pulling = statuses(running.actions)[0];
  assert.deepEqual([cachedCondition(pulling)?.reason, ready(pulling)?.reason], ["Pulling", "Pulling"]);
  assert.match(cachedCondition(pulling)!.message, new RegExp(`\\(Job ${job.metadata!.name}\\)`));
  assert.deepEqual(deleted(running.actions), []);

  const done = fixture({ ...modelApp(), status: pulling }, [
    ...live,
    ...pulled(job, "sha256:abc"),
  ] as KubernetesObject[]);
  await reconcile("acme/chat", done.deps);
  const after = statuses(done.actions)[0];
  assert.deepEqual([cachedCondition(after)?.status, ready(after)?.reason], ["True", "ScaledToZero"]);
  assert.equal(after?.model, "sha256:abc");
  assert.deepEqual(deleted(done.actions), [job.metadata!.name]);
  assert.equal(jobOf(done.actions), undefined);
});

test("a request that wakes the app before its Job is done: the Job goes, the replica starts and pulls (none waits on a Job)", async () => {
  const { job, live, first } = await firstReconcile();
  const woken = { ...modelApp(), spec: { ...modelApp().spec, replicas: 1 } } as ModelApp;
  const r = fixture({ ...woken, status: statuses(first.actions)[0] }, [
    ...live,
    job,
    cachePod(job, "running"),
  ] as KubernetesObject[]);
  await reconcile("acme/chat", r.deps);
  assert.equal(deploymentReplicas(r.actions), 1);
  assert.deepEqual([deleted(r.actions), jobOf(r.actions)], [[job.metadata!.name], undefined]);
});

test("the model changed while its Job ran: the old Job is deleted and its pod says nothing of the new model", async () => {
  const { job: old, live, first } = await firstReconcile();
  // The old model's Job succeeded, and its pod is still listed while the spec asks for another model.
  const changed = modelApp({ model: "hf.co/org/other:Q4_K_M" }, { generation: 2 });
  const r = fixture({ ...changed, status: statuses(first.actions)[0] }, [
    ...live,
    ...pulled(old, "sha256:old"),
  ] as KubernetesObject[]);
  await reconcile("acme/chat", r.deps);
  const s = statuses(r.actions)[0];
  assert.notEqual(cachedCondition(s)?.status, "True", "the other model's pull is not this one's");
  assert.notEqual(s?.model, "sha256:old");
  assert.notEqual(ready(s)?.status, "True");
  const next = jobOf(r.actions)!;
  assert.notEqual(next.metadata!.name, old.metadata!.name);
  assert.deepEqual(deleted(r.actions), [old.metadata!.name]);
});

test("a model the hub does not have: the Job's failure is the app's (Ready=False ModelNotFound); the Job stays, not retried", async () => {
  const { job, live, first } = await firstReconcile();
  const report = '{"error":"repository org/repo not found on the hub","code":"MODEL_NOT_FOUND"}';
  const failed = fixture({ ...modelApp(), status: statuses(first.actions)[0] }, [
    ...live,
    finished(job, "Failed"),
    cachePod(job, { exitCode: 3, message: report }),
  ] as KubernetesObject[]);
  await reconcile("acme/chat", failed.deps);
  const s = statuses(failed.actions)[0];
  assert.deepEqual(
    [ready(s)?.status, ready(s)?.reason, ready(s)?.message],
    ["False", "ModelNotFound", "repository org/repo not found on the hub"],
  );
  assert.deepEqual([deleted(failed.actions), jobOf(failed.actions)], [[], undefined]);
});

test("a Job for another spec (the model changed) is deleted; none is made for a cached model or an app with replicas", async () => {
  const stale = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "chat-cache-000000", namespace: "acme", ownerReferences: [{ controller: true, uid: "u1" }] },
  };
  const cached = fixture({ ...modelApp(), status: cachedStatus() }, [stale] as KubernetesObject[]);
  await reconcile("acme/chat", cached.deps);
  assert.deepEqual([deleted(cached.actions), jobOf(cached.actions)], [["chat-cache-000000"], undefined]);
  assert.equal(ready(statuses(cached.actions)[0])?.reason, "ScaledToZero");
  const serving = fixture(modelApp({ scaling: { minReplicas: 1 } }));
  await reconcile("acme/chat", serving.deps);
  assert.equal(jobOf(serving.actions), undefined, "a replica's init container pulls the model");
});

test("at steady state (everything applied, status current) a reconcile writes nothing", async () => {
  const first = fixture({ ...modelApp(), status: cachedStatus() });
  await reconcile("acme/chat", first.deps);
  const live = first.actions.flatMap((a) => (a.verb === "apply" ? [a.object] : []));
  const app = { ...modelApp(), status: statuses(first.actions)[0] };
  const { deps, actions } = fixture(app, live);
  assert.equal(await reconcile("acme/chat", deps), "success");
  assert.deepEqual(actions, []);
});

test("a Service made before Services were headless keeps its ClusterIP: no write, and none that would fail", async () => {
  const first = fixture({ ...modelApp(), status: cachedStatus() });
  await reconcile("acme/chat", first.deps);
  const live = first.actions.flatMap((a) => (a.verb === "apply" ? [a.object] : []));
  const service = live.find((o) => o.kind === "Service") as KubernetesObject & { spec: Record<string, unknown> };
  assert.equal(service.spec.clusterIP, "None", "a new Service is headless");
  service.spec = { ...service.spec, clusterIP: "10.96.0.10", ports: [{ ...(service.spec.ports as object[])[0] }] };
  const app = { ...modelApp(), status: statuses(first.actions)[0] };
  const steady = fixture(app, live);
  assert.equal(await reconcile("acme/chat", steady.deps), "success");
  assert.deepEqual(steady.actions, []);
  // A change that must be applied leaves the allocated ClusterIP out of the apply.
  service.spec = { ...service.spec, selector: { stale: "selector" } };
  const changed = fixture(app, live);
  assert.equal(await reconcile("acme/chat", changed.deps), "success");
  const applied = changed.actions.flatMap((a) => (a.verb === "apply" && a.object.kind === "Service" ? [a.object] : []));
  assert.equal(applied.length, 1);
  assert.equal((applied[0] as KubernetesObject & { spec: Record<string, unknown> }).spec.clusterIP, undefined);
});

test("an invalid spec: no object applied, Ready=False InvalidSpec in the status and a Warning event", async () => {
  const { deps, actions } = fixture(modelApp({ resources: { profile: "no-such-profile" } }));
  assert.equal(await reconcile("acme/chat", deps), "invalid");
  assert.deepEqual(applied(actions), []);
  assert.equal(ready(statuses(actions)[0])?.reason, "InvalidSpec");
  assert.deepEqual(events(actions), ["Warning InvalidSpec"]);
});

test("an object of the same name that is not the app's is never adopted: ResourceExists", async () => {
  const stranger = { apiVersion: "v1", kind: "Service", metadata: { name: "chat", namespace: "acme" } };
  const { deps, actions } = fixture(modelApp(), [stranger]);
  assert.equal(await reconcile("acme/chat", deps), "conflict");
  assert.ok(!applied(actions).includes("Service chat"), "the stranger is left alone");
  assert.equal(ready(statuses(actions)[0])?.reason, "ResourceExists");
  assert.ok(events(actions).includes("Warning ResourceExists"), events(actions).join(", "));
});

test("an app that is gone (or being deleted) is left to garbage collection", async () => {
  const { deps, actions } = fixture(modelApp({}, { deletionTimestamp: new Date() }));
  assert.equal(await reconcile("acme/chat", deps), "gone");
  assert.equal(await reconcile("acme/other", deps), "gone");
  assert.deepEqual(actions, []);
});
