// A ModelApp in a real container: the test control plane's real node (a kubelet built from the same Kubernetes
// source as the API server, containerd and runc from Debian's packages, the cgroupfs driver: test/cluster/real-node.ts)
// runs the image `npm run image` builds, imported into its containerd. The operator and the gateway run on the host,
// as in the other cluster tests; the model comes from a hub stand-in on the host, which the node's pods reach at the
// bridge's host address. Through the gateway a chat completion answers; the app scales to zero and back.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { CoreV1Api } from "@kubernetes/client-node";
import OpenAI from "openai";
import {
  REAL_NODE,
  REAL_NODE_GATEWAY,
  REAL_NODE_LABEL,
  startRealNode,
  type RealNode,
} from "../../cluster/real-node.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { containerImage, importIntoNode, type ContainerImage } from "../../support/container-image.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { smollm2Path } from "../../support/models.ts";
import { loadReportToken, startTestOperator, type TestOperator } from "../../support/operator.ts";
import { freePort, GANTRY } from "../../support/server.ts";
import {
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  readApp,
  waitForCondition,
  type OperatorCluster,
} from "../operator/helpers.ts";

const run = promisify(execFile);
const MODEL = "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const ABSENT_IMAGE = "gantry:0.0.0-absent";
const realProfile = {
  nodeSelector: { [REAL_NODE_LABEL]: "true" },
  tolerations: [{ key: REAL_NODE_LABEL, operator: "Equal", value: "true", effect: "NoSchedule" }],
  cpu: "500m",
  memory: "1Gi",
};
let c: OperatorCluster, img: ContainerImage, node: RealNode, hub: HubServer, op: TestOperator, gw: TestGateway;
let ns: string, key: string, core: CoreV1Api;

before(async () => {
  // The hub first (milliseconds): once it listens, after() closes it even when the rest fails.
  hub = await startHubServer({ host: "0.0.0.0" });
  [c, img] = await Promise.all([operatorCluster(), containerImage()]);
  core = c.kc.makeApiClient(CoreV1Api);
  node = await startRealNode(c.cp, { cmd: img.engine, env: img.env });
  await importIntoNode(img, node);
  await hub.register({
    org: "bartowski",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  ns = await createTestNamespace(c.kc, "org-real");
  const gwPort = await freePort();
  op = await startTestOperator(c.cp, {
    watchNamespace: ns,
    image: img.image,
    hubUrl: `http://${REAL_NODE_GATEWAY}:${hub.port}`,
    gatewayUrl: `http://127.0.0.1:${gwPort}`,
    autoscaler: { intervalSeconds: 0.5, reportTtlSeconds: 10 },
    resourceProfiles: {
      real: realProfile,
      // An image the node does not have and cannot pull (no registry): the app's Ready condition must name it.
      absent: { ...realProfile, image: ABSENT_IMAGE },
    },
    leaderElection: {
      name: "gantry-operator-real-node",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
  const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-rn-token-")), "token");
  fs.writeFileSync(tokenFile, loadReportToken(c.cp));
  gw = await startTestGateway(c.cp, { operatorUrls: [op.url], operatorTokenFile: tokenFile }, gwPort);
  const { stdout } = await run(process.execPath, [GANTRY, "keys", "create", "--org", ns, "--name", "real"], {
    env: { ...process.env, KUBECONFIG: c.cp.kubeconfig },
  });
  key = stdout.trim();
});

after(async () => {
  if (ns) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await gw?.stop();
  await op?.stop();
  await hub?.close();
});

test("a ModelApp on the real node runs the image in a container; through the gateway a chat completion answers; it scales to zero and back", async () => {
  await createApp(
    c,
    modelApp(ns, "chat", {
      model: MODEL,
      auth: "private",
      resources: { profile: "real" },
      scaling: { minReplicas: 1, maxReplicas: 1 },
    }),
  );
  await waitForCondition(c, ns, "chat", "Ready", "True", undefined, 600_000);
  const pods = await core.listNamespacedPod({ namespace: ns });
  const pod = pods.items.find((p) => p.status?.phase === "Running");
  assert.ok(pod, "a running pod");
  assert.equal(pod.spec?.nodeName, REAL_NODE);
  assert.match(pod.status?.containerStatuses?.[0]?.containerID ?? "", /^containerd:\/\//, "a real container");
  assert.equal(pod.status?.containerStatuses?.[0]?.image, `docker.io/library/${img.image}`);

  const openai = new OpenAI({ baseURL: `${gw.url}/${ns}/chat/v1`, apiKey: key, maxRetries: 0 });
  const ask = async () =>
    (await openai.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 8 }))
      .choices[0]!.message.content!;
  assert.ok((await ask()).length > 0, "answered through the gateway");

  // To zero: the pod goes; back: a request wakes the app and is answered by a new container, model from the volume.
  await c.custom.patchNamespacedCustomObject({
    group: "gantry.dev",
    version: "v1alpha1",
    namespace: ns,
    plural: "modelapps",
    name: "chat",
    body: [{ op: "replace", path: "/spec/scaling", value: { minReplicas: 0, maxReplicas: 1, scaleDownDelay: "1s" } }],
  });
  await waitForCondition(c, ns, "chat", "Ready", "True", "ScaledToZero", 300_000);
  await eventually(
    "no pod left",
    async () =>
      (await core.listNamespacedPod({ namespace: ns })).items.every((p) => p.status?.phase === "Succeeded")
        ? true
        : undefined,
    120_000,
  );
  assert.ok((await ask()).length > 0, "answered after scaling up from zero");
  assert.ok(((await readApp(c, ns, "chat")).spec.replicas ?? 0) >= 1);
});

test("an image the real node does not have: the app's Ready condition names it", async () => {
  await createApp(
    c,
    modelApp(ns, "absent", {
      model: MODEL,
      resources: { profile: "absent" },
      scaling: { minReplicas: 1, maxReplicas: 1 },
    }),
  );
  const app = await eventually(
    "Ready=False naming the image",
    async () => {
      const a = await readApp(c, ns, "absent");
      const ready = a.status?.conditions?.find((x) => x.type === "Ready");
      return ready?.status === "False" && ready.message?.includes(ABSENT_IMAGE) ? ready : undefined;
    },
    300_000,
    1000,
  );
  assert.match(app.message ?? "", /cannot pull image/);
});
