// Smoke tests of the real test control plane: CRDs and custom resources, GPU scheduling onto kwok nodes, garbage
// collection, and helm.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import type { KubeConfig, V1Deployment, V1Pod } from "@kubernetes/client-node";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";

let cp: ControlPlane, kc: KubeConfig, ns: string, core: CoreV1Api, apps: AppsV1Api;
const helmHome = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-helm-"));

const kubectl = (...args: string[]): string =>
  execFileSync(path.join(cp.binDir, "kubectl"), ["--kubeconfig", cp.kubeconfig, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
const helm = (...args: string[]): string =>
  execFileSync(path.join(cp.binDir, "helm"), ["--kubeconfig", cp.kubeconfig, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, HELM_CACHE_HOME: helmHome, HELM_CONFIG_HOME: helmHome, HELM_DATA_HOME: helmHome },
  });

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

before(async () => {
  cp = await ensureTestCluster();
  kc = kubeConfigFor(cp);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  ns = await createTestNamespace(kc, "smoke");
});

after(async () => {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  fs.rmSync(helmHome, { recursive: true, force: true });
});

test("the apiserver reports the version it was built as", () => {
  const version = JSON.parse(kubectl("version", "-o", "json")) as { serverVersion: { gitVersion: string } };
  assert.match(version.serverVersion.gitVersion, /^v1\.34\.\d+$/);
});

test("a CRD can be applied with kubectl and its custom resources used through kubectl and client-node", async () => {
  const crd = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.smoke.gantry.dev" },
    spec: {
      group: "smoke.gantry.dev",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: { spec: { type: "object", properties: { size: { type: "integer" } } } },
            },
          },
        },
      ],
    },
  };
  kubectl("apply", "-f", writeTemp("crd.json", crd));
  kubectl("wait", "--for=condition=Established", "crd/widgets.smoke.gantry.dev", "--timeout=30s");
  const custom = kc.makeApiClient(CustomObjectsApi);
  const group = "smoke.gantry.dev",
    version = "v1",
    plural = "widgets";
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace: ns,
    plural,
    body: { apiVersion: "smoke.gantry.dev/v1", kind: "Widget", metadata: { name: "from-client" }, spec: { size: 3 } },
  });
  kubectl(
    "-n",
    ns,
    "apply",
    "-f",
    writeTemp("widget.json", {
      apiVersion: "smoke.gantry.dev/v1",
      kind: "Widget",
      metadata: { name: "from-kubectl" },
      spec: { size: 5 },
    }),
  );
  const listed = (await custom.listNamespacedCustomObject({ group, version, namespace: ns, plural })) as {
    items: { metadata: { name: string }; spec: { size: number } }[];
  };
  assert.deepEqual(listed.items.map((w) => [w.metadata.name, w.spec.size]).sort(), [
    ["from-client", 3],
    ["from-kubectl", 5],
  ]);
  assert.equal(kubectl("-n", ns, "get", "widget", "from-client", "-o", "jsonpath={.spec.size}"), "3");
  assert.throws(
    () =>
      kubectl(
        "-n",
        ns,
        "apply",
        "-f",
        writeTemp("bad.json", {
          apiVersion: "smoke.gantry.dev/v1",
          kind: "Widget",
          metadata: { name: "bad" },
          spec: { size: "big" },
        }),
      ),
    /Invalid value/,
  );
});

function writeTemp(name: string, obj: unknown): string {
  const file = path.join(helmHome, name);
  fs.writeFileSync(file, JSON.stringify(obj));
  return file;
}

function gpuDeployment(name: string, gpus: number): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
          containers: [
            {
              name: "main",
              image: "example.invalid/never-pulled:1",
              resources: { limits: { "nvidia.com/gpu": String(gpus) } },
            },
          ],
        },
      },
    },
  };
}

const podsOf = async (app: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items;

test("a Deployment asking for one GPU is scheduled onto a GPU node and runs; deleting it garbage-collects its pods", async () => {
  await apps.createNamespacedDeployment({ namespace: ns, body: gpuDeployment("one-gpu", 1) });
  const pod = await eventually("a Running pod", async () =>
    (await podsOf("one-gpu")).find((p) => p.status?.phase === "Running"),
  );
  assert.match(pod.spec?.nodeName ?? "", /^gpu-node-\d$/);
  const node = await core.readNode({ name: pod.spec?.nodeName ?? "" });
  assert.ok(Number(node.status?.allocatable?.["nvidia.com/gpu"]) >= 1);
  assert.ok(pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));

  await apps.deleteNamespacedDeployment({ name: "one-gpu", namespace: ns });
  await eventually("the pods to be garbage-collected", async () =>
    (await podsOf("one-gpu")).length === 0 ? true : undefined,
  );
  const replicaSets = await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: "app=one-gpu" });
  assert.equal(replicaSets.items.length, 0);
});

test("a Deployment asking for 9 GPUs stays Pending with a FailedScheduling event", async () => {
  await apps.createNamespacedDeployment({ namespace: ns, body: gpuDeployment("nine-gpus", 9) });
  const pod = await eventually("the pod", async () => (await podsOf("nine-gpus"))[0]);
  const event = await eventually("a FailedScheduling event", async () => {
    const events = await core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: `involvedObject.name=${pod.metadata?.name}`,
    });
    return events.items.find((e) => e.reason === "FailedScheduling");
  });
  assert.match(event.message ?? "", /Insufficient nvidia\.com\/gpu/);
  const now = await core.readNamespacedPod({ name: pod.metadata?.name ?? "", namespace: ns });
  assert.equal(now.status?.phase, "Pending");
  assert.equal(now.spec?.nodeName, undefined);
});

test("helm installs and uninstalls a local chart", async () => {
  const chart = path.resolve(import.meta.dirname, "../../cluster/fixtures/test-chart");
  helm("install", "smoke", chart, "--namespace", ns, "--wait", "--timeout", "60s", "--set", "greeting=hi there");
  const cm = await core.readNamespacedConfigMap({ name: "smoke-greeting", namespace: ns });
  assert.equal(cm.data?.greeting, "hi there");
  assert.match(helm("list", "--namespace", ns, "-o", "json"), /"name":"smoke".*"status":"deployed"/);
  helm("uninstall", "smoke", "--namespace", ns, "--wait");
  await assert.rejects(
    core.readNamespacedConfigMap({ name: "smoke-greeting", namespace: ns }),
    (e: { code?: number }) => e.code === 404,
  );
  assert.equal(helm("list", "--namespace", ns, "-q").trim(), "");
});
