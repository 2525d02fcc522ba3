// End to end with pods that really run (the test cluster's process runtime): a CPU ModelApp on a tiny generated model
// served from the test hub becomes Ready with `gantry serve` answering at its pod IP; the model volume keeps the model,
// so a replacement pod starts without downloading it again; a model the hub lacks is reported as ModelNotFound; an app
// at zero replicas gets its model pulled by a model cache Job before it is Ready (and a missing one reported at once).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { BatchV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { Ollama } from "ollama";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { kubectl, startTestOperator, type TestOperator } from "../../support/operator.ts";
import {
  condition,
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  waitForCondition,
  type OperatorCluster,
} from "./helpers.ts";

let c: OperatorCluster, op: TestOperator, hub: HubServer, ns: string, core: CoreV1Api;
const MODEL = "hf.co/acme/tiny-chat-GGUF:Q8_0";
const FILE = "tiny-chat-Q8_0.gguf";

before(async () => {
  c = await operatorCluster();
  core = c.kc.makeApiClient(CoreV1Api);
  ns = await createTestNamespace(c.kc, "org-live");
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "acme",
    repo: "tiny-chat-GGUF",
    files: { [FILE]: await tinyModelPath({ controlLogit: -8 }) },
  });
  op = await startTestOperator(c.cp, {
    watchNamespace: ns,
    hubUrl: `http://${POD_GATEWAY}:${hub.port}`,
    podLabels: { [PROCESS_RUNTIME_LABEL]: "true" },
    leaderElection: {
      name: "gantry-operator-serving-test",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
});

after(async () => {
  await op?.stop();
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await hub?.close();
});

const runningPod = (app: string): Promise<V1Pod> =>
  eventually(
    `a ready pod of ${app}`,
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: `gantry.dev/modelapp=${app}` })).items;
      return pods.find(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
      );
    },
    180_000,
  );
const downloads = () =>
  hub.requests.filter((r) => r.file === FILE && r.method === "GET" && r.status < 300 && r.bytes > 0).length;

test("a CPU ModelApp pulls its model into the volume and serves it from a real pod; a new pod reuses the volume", async () => {
  await createApp(
    c,
    modelApp(ns, "tiny", {
      model: MODEL,
      modelfile: "SYSTEM You are a test.\nPARAMETER num_predict 6\n",
      resources: { profile: "cpu", cpu: "2" },
      server: { parallel: 2, contextLength: 512 },
      scaling: { minReplicas: 1 },
    }),
  );
  const app = await waitForCondition(c, ns, "tiny", "Ready", "True", "Serving", 180_000);
  assert.equal(condition(app, "ModelCached")?.status, "True");
  assert.equal(
    app.status?.model,
    `sha256:${hub.sha256("acme", "tiny-chat-GGUF", FILE)}`,
    "the digest the hub published",
  );
  assert.equal(downloads(), 1);

  const pod = await runningPod("tiny");
  const ollama = new Ollama({ host: `http://${pod.status?.podIP}:11434` });
  const { models } = await ollama.list();
  assert.ok(
    models.some((m) => m.name === "tiny:latest"),
    `served model list: ${models.map((m) => m.name).join(", ")}`,
  );
  const show = await ollama.show({ model: "tiny:latest" });
  assert.equal(show.system, "You are a test.");
  const out = await ollama.generate({ model: "tiny:latest", prompt: "hello", stream: false });
  assert.equal(out.done, true);
  assert.equal(out.eval_count, 6, "PARAMETER num_predict from the ModelApp's modelfile");
  assert.match(
    kubectl(c.cp, ["logs", "-n", ns, pod.metadata!.name!, "-c", "prepare"]),
    /tiny:latest is ready \(sha256:/,
  );

  await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: ns });
  const next = await eventually(
    "a replacement pod",
    async () => {
      const p = await runningPod("tiny");
      return p.metadata?.name !== pod.metadata?.name ? p : undefined;
    },
    180_000,
  );
  const again = await new Ollama({ host: `http://${next.status?.podIP}:11434` }).generate({
    model: "tiny:latest",
    prompt: "again",
    stream: false,
  });
  assert.equal(again.eval_count, 6);
  assert.equal(downloads(), 1, "the model volume kept the model: no second download");
});

test("a model the hub does not have: ModelCached and Ready are False with ModelNotFound, naming the repository", async () => {
  await createApp(c, modelApp(ns, "missing", { model: "hf.co/acme/no-such-GGUF:Q8_0", scaling: { minReplicas: 1 } }));
  const app = await waitForCondition(c, ns, "missing", "Ready", "False", "ModelNotFound", 120_000);
  assert.equal(condition(app, "ModelCached")?.reason, "ModelNotFound");
  assert.match(condition(app, "Ready")!.message, /acme\/no-such-GGUF/);
});

test("at zero replicas: a model cache Job pulls the model before the app is Ready, and is deleted; no replica runs", async () => {
  const before = downloads();
  await createApp(
    c,
    modelApp(ns, "idle", {
      model: MODEL,
      modelVolume: { name: "idle-models" },
      resources: { profile: "cpu" },
      scaling: { minReplicas: 0 },
    }),
  );
  const app = await waitForCondition(c, ns, "idle", "Ready", "True", "ScaledToZero", 180_000);
  assert.equal(condition(app, "ModelCached")?.status, "True");
  assert.equal(
    app.status?.model,
    `sha256:${hub.sha256("acme", "tiny-chat-GGUF", FILE)}`,
    "the digest the Job reported",
  );
  assert.equal(downloads(), before + 1, "pulled into its own volume once");
  const batch = c.kc.makeApiClient(BatchV1Api);
  await eventually(
    "the Job deleted once the model is cached",
    async () => ((await batch.listNamespacedJob({ namespace: ns })).items.length === 0 ? true : undefined),
    60_000,
  );
  const deployment = JSON.parse(kubectl(c.cp, ["get", "deployment", "idle", "-n", ns, "-o", "json"])) as {
    spec: { replicas: number };
  };
  assert.equal(deployment.spec.replicas, 0);
});

test("at zero replicas, a model the hub does not have is ModelNotFound before any request; the Job is not retried", async () => {
  await createApp(c, modelApp(ns, "gone", { model: "hf.co/acme/no-such-GGUF:Q8_0", scaling: { minReplicas: 0 } }));
  const app = await waitForCondition(c, ns, "gone", "Ready", "False", "ModelNotFound", 120_000);
  assert.match(condition(app, "Ready")!.message, /acme\/no-such-GGUF/);
  const batch = c.kc.makeApiClient(BatchV1Api);
  const job = await eventually(
    "the Job failed",
    async () =>
      (await batch.listNamespacedJob({ namespace: ns })).items.find(
        (j) =>
          j.metadata?.name?.startsWith("gone-cache-") &&
          j.status?.conditions?.some((x) => x.type === "Failed" && x.status === "True"),
      ),
    60_000,
  );
  const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${job.metadata!.name}` });
  assert.equal(pods.items.length, 1, "exit code 3 ends the Job: the hub is not asked again");
});
