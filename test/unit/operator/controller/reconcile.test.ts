// reconcile() against in-memory caches and a fake writer that records every write (kubernetes/sample-controller's
// fixture style): the exact writes of a first reconcile, none at steady state, an invalid spec, an object not ours.
// The same paths against a real kube-apiserver: test/integration/operator/reconcile.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { silentLogger } from "../../../../server/common/logger.ts";
import type { ModelApp, ModelAppStatus } from "../../../../operator/api/v1alpha1/modelapp.ts";
import { reconcile, type ReconcileDeps } from "../../../../operator/controller/reconcile.ts";
import type { Cache, Caches } from "../../../../operator/kube/caches.ts";
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
  };
  const deps: ReconcileDeps = {
    caches,
    writer: {
      apply: async (object) => void actions.push({ verb: "apply", object }),
      get: async () => undefined,
      applyStatus: async (namespace, name, status) =>
        void actions.push({ verb: "applyStatus", key: `${namespace}/${name}`, status }),
      event: async (event) => void actions.push({ verb: "event", event }),
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

test("a new app: applies its volume, Deployment and Service, writes its status once, says what it created", async () => {
  const { deps, actions } = fixture(modelApp());
  assert.equal(await reconcile("acme/chat", deps), "success");
  assert.deepEqual(applied(actions), ["Deployment chat", "PersistentVolumeClaim models", "Service chat"].sort());
  assert.equal(statuses(actions).length, 1);
  assert.equal(statuses(actions)[0]?.observedGeneration, 1);
  assert.equal(ready(statuses(actions)[0])?.status, "True", "scaled to zero (minReplicas 0), it is ready to be woken");
  assert.ok(events(actions).includes("Normal Created"), events(actions).join(", "));
});

test("at steady state (everything applied, status current) a reconcile writes nothing", async () => {
  const first = fixture(modelApp());
  await reconcile("acme/chat", first.deps);
  const live = first.actions.flatMap((a) => (a.verb === "apply" ? [a.object] : []));
  const app = { ...modelApp(), status: statuses(first.actions)[0] };
  const { deps, actions } = fixture(app, live);
  assert.equal(await reconcile("acme/chat", deps), "success");
  assert.deepEqual(actions, []);
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
