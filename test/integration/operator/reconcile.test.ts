// The operator against the real API server, with kwok's fake GPU nodes: what a cluster admin sees after
// `kubectl apply` of ModelApps — objects, scheduling, status, rollouts, garbage collection, validation, no idle writes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppsV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { renderService } from "../../../operator/render/service.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import {
  kubectl,
  kubectlResult,
  loadReportToken,
  postLoad,
  startTestOperator,
  type TestOperator,
} from "../../support/operator.ts";
import {
  condition,
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  readApp,
  waitForCondition,
  type OperatorCluster,
} from "./helpers.ts";

let c: OperatorCluster, op: TestOperator, ns: string, core: CoreV1Api, apps: AppsV1Api;
const MODEL = "hf.co/acme/tiny-chat-GGUF:Q8_0";

before(async () => {
  c = await operatorCluster();
  core = c.kc.makeApiClient(CoreV1Api);
  apps = c.kc.makeApiClient(AppsV1Api);
  ns = await createTestNamespace(c.kc, "org-acme");
  op = await startTestOperator(c.cp, {
    gatewayUrl: "https://gateway.example.test",
    image: "registry.example.test/gantry:test",
    resourceProfiles: {
      "nvidia-l4": {
        gpuResource: "nvidia.com/gpu",
        nodeSelector: { "nvidia.com/gpu.product": "NVIDIA-L4" },
        tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
        image: "registry.example.test/gantry:test-cuda",
      },
    },
    leaderElection: {
      name: "gantry-operator-reconcile-test",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
});

after(async () => {
  await op?.stop();
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
});

const podsOf = async (app: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `gantry.dev/modelapp=${app}` })).items;

// First, while the L4 node (4 GPUs) is free: the next test's pods may land there too.
test("a profile with a node selector pins pods to that GPU product", async () => {
  await createApp(
    c,
    modelApp(ns, "l4-chat", { model: MODEL, resources: { profile: "nvidia-l4" }, scaling: { minReplicas: 1 } }),
  );
  await waitForCondition(c, ns, "l4-chat", "Ready", "True", "Serving");
  const [pod] = await podsOf("l4-chat");
  assert.equal(pod?.spec?.nodeName, "gpu-node-1", "gpu-node-1 is the L4 node");
  assert.equal(pod?.spec?.containers[0]?.image, "registry.example.test/gantry:test-cuda");
});

test("a GPU ModelApp becomes a model volume, a Deployment and a Service; its pods run only on GPU nodes; status says Ready", async () => {
  kubectl(
    c.cp,
    ["apply", "-f", "-"],
    JSON.stringify(
      modelApp(ns, "chat", {
        model: MODEL,
        resources: { profile: "nvidia-gpu", gpus: 2 },
        scaling: { minReplicas: 2, maxReplicas: 3 },
      }),
    ),
  );
  await waitForCondition(c, ns, "chat", "Ready", "True", "Serving");
  // Ready means serving (one replica is enough); the status catches up as the second pod becomes ready.
  const app = await eventually("both replicas ready", async () => {
    const a = await readApp(c, ns, "chat");
    return a.status?.readyReplicas === 2 ? a : undefined;
  });
  assert.equal(app.status?.url, `https://gateway.example.test/${ns}/chat`);
  assert.match(condition(app, "Ready")?.message ?? "", /^2 of 2 replicas ready/);
  assert.equal(condition(app, "Scheduled")?.status, "True");
  assert.equal(condition(app, "ModelCached")?.status, "True");

  const claim = await core.readNamespacedPersistentVolumeClaim({ name: "models", namespace: ns });
  assert.equal(claim.spec?.resources?.requests?.storage, "20Gi");
  // Both apps of the namespace name the default volume "models": each owns it, neither controls it.
  assert.deepEqual(claim.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.controller ?? false]).sort(), [
    ["ModelApp", "chat", false],
    ["ModelApp", "l4-chat", false],
  ]);

  const deployment = await apps.readNamespacedDeployment({ name: "chat", namespace: ns });
  const pod = deployment.spec!.template.spec!;
  assert.equal(deployment.spec?.replicas, 2);
  assert.deepEqual(
    deployment.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.controller]),
    [["ModelApp", "chat", true]],
  );
  assert.deepEqual(
    pod.initContainers?.map((i) => i.args),
    [["prepare", MODEL, "--report", "/dev/termination-log"]],
  );
  assert.deepEqual(pod.containers[0]!.args, ["serve", "--model", MODEL]);
  assert.equal(pod.containers[0]!.resources?.limits?.["nvidia.com/gpu"], "2");
  assert.equal(pod.containers[0]!.readinessProbe?.httpGet?.path, "/health");
  assert.ok(pod.tolerations?.some((t) => t.key === "nvidia.com/gpu" && t.effect === "NoSchedule"));
  assert.equal(pod.securityContext?.runAsNonRoot, true);
  assert.equal(pod.volumes?.find((v) => v.name === "models")?.persistentVolumeClaim?.claimName, "models");

  const svc = await core.readNamespacedService({ name: "chat", namespace: ns });
  assert.deepEqual(svc.spec?.selector, deployment.spec?.selector?.matchLabels);
  assert.equal(svc.spec?.clusterIP, "None", "headless: the gateway goes to the pods");

  const nodes = (await podsOf("chat")).map((p) => p.spec?.nodeName ?? "");
  assert.equal(nodes.length, 2);
  for (const n of nodes) assert.match(n, /^gpu-node-/, "GPU pods land on GPU nodes only");

  // kubectl shows the printer columns.
  const table = kubectl(c.cp, ["get", "modelapps", "-n", ns]);
  assert.match(table, /NAME\s+MODEL\s+AUTH\s+REPLICAS\s+READY\s+URL\s+AGE/);
  assert.match(
    table,
    new RegExp(
      `chat\\s+${MODEL.replace(/[.:]/g, "\\$&")}\\s+private\\s+2\\s+2\\s+https://gateway.example.test/${ns}/chat`,
    ),
  );
});

test("a second reconcile writes nothing: touching an app reconciles it without any API write", async () => {
  await waitForCondition(c, ns, "chat", "Ready", "True", "Serving");
  const writes = () => op.writes();
  // Pods of the earlier tests settle first (each of their status changes is a legitimate write).
  let writesBefore = await writes();
  for (let quiet = 0, rounds = 0; quiet < 3; rounds++) {
    assert.ok(rounds < 60, "the operator kept writing for a minute with nothing changing");
    await new Promise((r) => setTimeout(r, 1000));
    const now = await writes();
    quiet = now === writesBefore ? quiet + 1 : 0;
    writesBefore = now;
  }
  const reconcilesBefore = await op.metric("gantry_operator_reconciles_total");
  kubectl(c.cp, ["annotate", "modelapp", "chat", "-n", ns, "example.test/touched=1"]);
  await eventually("a reconcile after the annotation", async () =>
    (await op.metric("gantry_operator_reconciles_total")) > reconcilesBefore ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(await writes(), writesBefore, "no writes besides the leader lease");
});

test("a spec change rolls the Deployment's pods; kubectl scale goes through the scale subresource", async () => {
  const before = await apps.readNamespacedDeployment({ name: "chat", namespace: ns });
  const hashBefore = before.spec?.template.metadata?.annotations?.["gantry.dev/spec-hash"];
  kubectl(c.cp, [
    "patch",
    "modelapp",
    "chat",
    "-n",
    ns,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { server: { parallel: 8 } } }),
  ]);
  const rolled = await eventually("a new pod template", async () => {
    const d = await apps.readNamespacedDeployment({ name: "chat", namespace: ns });
    return d.spec?.template.metadata?.annotations?.["gantry.dev/spec-hash"] !== hashBefore ? d : undefined;
  });
  assert.ok(
    rolled.spec?.template.spec?.containers[0]?.env?.some((e) => e.name === "GANTRY_NUM_PARALLEL" && e.value === "8"),
  );
  await eventually("every pod on the new template", async () => {
    const pods = await podsOf("chat");
    const hashes = new Set(
      pods.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata?.annotations?.["gantry.dev/spec-hash"]),
    );
    return hashes.size === 1 && !hashes.has(hashBefore) ? true : undefined;
  });
  const events = kubectl(c.cp, [
    "get",
    "events",
    "-n",
    ns,
    "--field-selector",
    "involvedObject.kind=ModelApp,involvedObject.name=chat",
    "-o",
    "jsonpath={.items[*].reason}",
  ]);
  assert.match(events, /RollingUpdate/);

  kubectl(c.cp, ["scale", "modelapp", "chat", "-n", ns, "--replicas=3"]);
  await eventually("3 replicas", async () =>
    (await apps.readNamespacedDeployment({ name: "chat", namespace: ns })).spec?.replicas === 3 ? true : undefined,
  );
  kubectl(c.cp, ["scale", "modelapp", "chat", "-n", ns, "--replicas=9"]);
  await waitForCondition(c, ns, "chat", "Ready", "True");
  assert.equal(
    (await apps.readNamespacedDeployment({ name: "chat", namespace: ns })).spec?.replicas,
    3,
    "kept within maxReplicas",
  );
});

test("more GPUs than any node has: Scheduled and Ready are False with InsufficientGPU", async () => {
  await createApp(
    c,
    modelApp(ns, "huge", { model: MODEL, resources: { profile: "nvidia-gpu", gpus: 9 }, scaling: { minReplicas: 1 } }),
  );
  const app = await waitForCondition(c, ns, "huge", "Ready", "False", "InsufficientGPU");
  assert.equal(condition(app, "Scheduled")?.reason, "InsufficientGPU");
  assert.match(condition(app, "Ready")!.message, /nvidia\.com\/gpu/);
  const events = kubectl(c.cp, [
    "get",
    "events",
    "-n",
    ns,
    "--field-selector",
    "involvedObject.kind=ModelApp,involvedObject.name=huge",
    "-o",
    "jsonpath={.items[*].type}",
  ]);
  assert.match(events, /Warning/);
});

test("invalid specs: the CRD refuses what its schema can check; the rest is reported in status", async () => {
  const refuse = (name: string, spec: Record<string, unknown>, why: RegExp) => {
    const r = kubectlResult(c.cp, ["apply", "-f", "-"], JSON.stringify(modelApp(ns, name, spec)));
    assert.equal(r.ok, false, `${name} should be refused`);
    assert.match(r.out, why, name);
  };
  refuse("minmax", { model: MODEL, scaling: { minReplicas: 3, maxReplicas: 2 } }, /minReplicas must not exceed/);
  refuse("badauth", { model: MODEL, auth: "everyone" }, /auth.*Unsupported value|supported values/);
  refuse("1starts-with-digit", { model: MODEL }, /must start with a letter/);
  refuse(`x${"a".repeat(60)}`, { model: MODEL }, /at most 53 characters/);
  refuse("nomodel", {}, /spec.model: Required/);
  refuse("badsize", { model: MODEL, modelVolume: { size: "lots" } }, /size/);

  kubectl(
    c.cp,
    ["apply", "-f", "-"],
    JSON.stringify(modelApp(ns, "immutable", { model: MODEL, modelVolume: { name: "vol-a" } })),
  );
  const change = kubectlResult(c.cp, [
    "patch",
    "modelapp",
    "immutable",
    "-n",
    ns,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { modelVolume: { name: "vol-b" } } }),
  ]);
  assert.equal(change.ok, false);
  assert.match(change.out, /modelVolume is immutable/);

  await createApp(c, modelApp(ns, "noprofile", { model: MODEL, resources: { profile: "tpu-v9" } }));
  const unknownProfile = await waitForCondition(c, ns, "noprofile", "Ready", "False", "InvalidSpec");
  assert.match(
    condition(unknownProfile, "Ready")!.message,
    /unknown resource profile "tpu-v9".*cpu, nvidia-gpu, nvidia-l4/,
  );
  await createApp(c, modelApp(ns, "badref", { model: "hf.co/only-an-org" }));
  assert.match(
    condition(await waitForCondition(c, ns, "badref", "Ready", "False", "InvalidSpec"), "Ready")!.message,
    /spec\.model/,
  );
  await createApp(c, modelApp(ns, "badmodelfile", { model: MODEL, modelfile: "PARAMETER temperature hot" }));
  assert.match(
    condition(await waitForCondition(c, ns, "badmodelfile", "Ready", "False", "InvalidSpec"), "Ready")!.message,
    /spec\.modelfile.*line 1/,
  );
  for (const name of ["noprofile", "badref", "badmodelfile"]) {
    await assert.rejects(
      apps.readNamespacedDeployment({ name, namespace: ns }),
      "nothing is created for an invalid spec",
    );
  }

  // Fixing the spec brings the app up.
  kubectl(c.cp, [
    "patch",
    "modelapp",
    "noprofile",
    "-n",
    ns,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { resources: { profile: "cpu" }, scaling: { minReplicas: 1 } } }),
  ]);
  const fixed = await waitForCondition(c, ns, "noprofile", "Ready", "True", "Serving");
  assert.equal((await podsOf("noprofile"))[0]?.spec?.nodeName, "cpu-node-0");
  assert.equal(fixed.status?.readyReplicas, 1);
});

test("an object with the app's name that the operator does not own is never adopted", async () => {
  await core.createNamespacedService({
    namespace: ns,
    body: { metadata: { name: "taken" }, spec: { ports: [{ port: 80 }], selector: { app: "mine" } } },
  });
  await createApp(c, modelApp(ns, "taken", { model: MODEL, scaling: { minReplicas: 1 } }));
  const app = await waitForCondition(c, ns, "taken", "Ready", "False", "ResourceExists");
  assert.match(condition(app, "Ready")!.message, /Service taken already exists/);
  const svc = await core.readNamespacedService({ name: "taken", namespace: ns });
  assert.deepEqual(svc.spec?.selector, { app: "mine" }, "the user's Service is untouched");
  assert.equal(svc.metadata?.ownerReferences, undefined);
});

test("a Service an earlier version made with a ClusterIP keeps it; new ones are headless", async () => {
  // An invalid spec first, so the operator makes nothing; then the Service as an earlier version rendered it (a
  // ClusterIP, owned by the app); then a valid spec. An apply of the headless Service over it would fail (immutable).
  await createApp(
    c,
    modelApp(ns, "legacy", { model: MODEL, resources: { profile: "no-such-profile" }, scaling: { minReplicas: 1 } }),
  );
  const app = await waitForCondition(c, ns, "legacy", "Ready", "False", "InvalidSpec");
  const rendered = renderService(
    { name: "legacy", namespace: ns, uid: app.metadata.uid! } as Parameters<typeof renderService>[0],
    { serverPort: 11434 },
  );
  const { clusterIP: _none, ...spec } = rendered.spec;
  const earlier = await core.createNamespacedService({ namespace: ns, body: { ...rendered, spec } });
  assert.match(earlier.spec?.clusterIP ?? "", /^\d+\.\d+\.\d+\.\d+$/);
  kubectl(c.cp, [
    "patch",
    "modelapp",
    "legacy",
    "-n",
    ns,
    "--type=json",
    "-p",
    '[{"op":"remove","path":"/spec/resources"}]',
  ]);
  await waitForCondition(c, ns, "legacy", "Ready", "True", "Serving");
  const svc = await core.readNamespacedService({ name: "legacy", namespace: ns });
  assert.equal(svc.spec?.clusterIP, earlier.spec?.clusterIP, "kept");
});

test("deleting an app garbage-collects its objects but keeps a model volume another app still uses", async () => {
  await createApp(
    c,
    modelApp(ns, "first", {
      model: MODEL,
      modelVolume: { name: "shared" },
      modelfile: "SYSTEM You are terse.\nPARAMETER temperature 0.2\n",
      scaling: { minReplicas: 1 },
    }),
  );
  await createApp(
    c,
    modelApp(ns, "second", { model: MODEL, modelVolume: { name: "shared" }, scaling: { minReplicas: 1 } }),
  );
  await waitForCondition(c, ns, "first", "Ready", "True");
  await waitForCondition(c, ns, "second", "Ready", "True");
  const owners = async () =>
    (await core.readNamespacedPersistentVolumeClaim({ name: "shared", namespace: ns })).metadata?.ownerReferences
      ?.map((o) => o.name)
      .sort();
  await eventually("both apps own the shared volume", async () =>
    (await owners())?.join() === "first,second" ? true : undefined,
  );
  const cm = await core.readNamespacedConfigMap({ name: "first-modelfile", namespace: ns });
  assert.match(cm.data?.Modelfile ?? "", new RegExp(`^FROM ${MODEL.replace(/[.:]/g, "\\$&")}\\nSYSTEM You are terse.`));
  const first = await apps.readNamespacedDeployment({ name: "first", namespace: ns });
  assert.deepEqual(first.spec?.template.spec?.initContainers?.[0]?.args, [
    "prepare",
    MODEL,
    "--modelfile",
    "/etc/gantry/Modelfile",
    "--as",
    "first:latest",
    "--report",
    "/dev/termination-log",
  ]);

  kubectl(c.cp, ["delete", "modelapp", "first", "-n", ns, "--wait=true"]);
  await eventually(
    "first's Deployment, Service and ConfigMap to be collected",
    async () => {
      const gone = await Promise.all([
        apps.readNamespacedDeployment({ name: "first", namespace: ns }).then(
          () => false,
          () => true,
        ),
        core.readNamespacedService({ name: "first", namespace: ns }).then(
          () => false,
          () => true,
        ),
        core.readNamespacedConfigMap({ name: "first-modelfile", namespace: ns }).then(
          () => false,
          () => true,
        ),
        podsOf("first").then((p) => p.length === 0),
      ]);
      return gone.every(Boolean) ? true : undefined;
    },
    90_000,
  );
  assert.deepEqual(await owners(), ["second"], "the shared volume stays, owned by the app still using it");
  await readApp(c, ns, "second");

  kubectl(c.cp, ["delete", "modelapp", "second", "-n", ns, "--wait=true"]);
  await eventually(
    "the shared volume to go with its last app",
    async () =>
      core.readNamespacedPersistentVolumeClaim({ name: "shared", namespace: ns }).then(
        (p) => (p.metadata?.deletionTimestamp ? true : undefined),
        () => true,
      ),
    90_000,
  );
});

test("/metrics, /healthz and bad load reports", async () => {
  const text = await op.metrics();
  for (const name of [
    "gantry_operator_reconciles_total",
    "gantry_operator_reconcile_duration_seconds",
    "gantry_operator_workqueue_depth",
    "gantry_operator_apps",
    "gantry_operator_kube_requests_total",
    "gantry_operator_leader",
  ]) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, "m"), name);
  }
  assert.equal(await op.metric("gantry_operator_leader"), 1);
  assert.ok((await op.metric("gantry_operator_apps", { condition: "Ready", status: "True" })) >= 2);
  assert.ok((await op.metric("gantry_operator_reconciles_total", { result: "invalid" })) >= 3);
  assert.equal((await fetch(`${op.url}/healthz`)).status, 200);
  for (const [body, status] of [
    ["{", 400],
    [JSON.stringify({ apps: [] }), 400],
    [JSON.stringify({ gateway: "g", apps: [{ namespace: ns, name: "x", inFlight: -1 }] }), 400],
  ] as const) {
    const r = await postLoad(op.url, loadReportToken(c.cp), body);
    assert.equal(r.status, status, body);
    assert.equal(typeof ((await r.json()) as { error: unknown }).error, "string");
  }
  assert.equal((await fetch(`${op.url}/nope`)).status, 404);
});
