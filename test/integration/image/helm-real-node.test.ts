// `helm install` of the chart with the image `npm run image` builds, on the test cluster's real node: the operator,
// the gateway, the app's model pod and the `helm test` pod all run the image as containerd containers. They reach the
// API server through the `kubernetes` Service and each other through Service names (CoreDNS, the cluster DNS the
// kubelet gives them: test/cluster/real-node.ts). The checks are the ones the kind script and the process-runtime
// install run (test/support/platform-e2e.ts): install, keys, a ModelApp Ready and answering, helm test, upgrade,
// uninstall. The chart's broker runs too (a Debian redis-server image made here: test/support/broker-image.ts), and a
// chat completion goes through fal's queue API on it.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { REAL_NODE, REAL_NODE_GATEWAY, REAL_NODE_LABEL, startRealNode } from "../../cluster/real-node.ts";
import { ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { BROKER_IMAGE, brokerImage } from "../../support/broker-image.ts";
import { containerImage, importIntoNode } from "../../support/container-image.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { helmOf, kubectlOf, platformChecks, type PlatformTarget } from "../../support/platform-e2e.ts";
import { GANTRY, REPO } from "../../support/server.ts";

let cp: ControlPlane, hub: HubServer, target: PlatformTarget;
const suffix = Math.random().toString(36).slice(2, 7);
/** Every pod of the release, and the apps' model pods, on the real node (the kwok nodes run nothing). */
const onRealNode = {
  nodeSelector: { [REAL_NODE_LABEL]: "true" },
  tolerations: [{ key: REAL_NODE_LABEL, operator: "Equal", value: "true", effect: "NoSchedule" }],
};

before(async () => {
  let img;
  // The hub first (milliseconds): once it listens, after() closes it even when the rest fails.
  hub = await startHubServer({ host: "0.0.0.0" });
  [cp, img] = await Promise.all([ensureTestCluster(), containerImage()]);
  const node = await startRealNode(cp, { cmd: img.engine, env: img.env });
  await importIntoNode(img, node);
  await importIntoNode(img, node, await brokerImage(img));
  await hub.register({
    org: "acme",
    repo: "tiny-chat-GGUF",
    files: { "tiny-chat-Q8_0.gguf": await tinyModelPath() },
  });
  const [repository, tag] = img.image.split(":") as [string, string];
  target = {
    kubeconfig: cp.kubeconfig,
    binDir: cp.binDir,
    chart: path.join(REPO, "charts", "gantry"),
    release: `gantry-${suffix}`,
    releaseNs: `gantry-rn-${suffix}`,
    org: `acme-rn-${suffix}`,
    model: "hf.co/acme/tiny-chat-GGUF:Q8_0",
    readyTimeout: "300s",
    gantry: [process.execPath, GANTRY],
    watchOrg: true,
    installArgs: [
      // The image imported into the node's containerd; never pulled (no registry answers here).
      ...["--set", `image.repository=${repository}`, "--set", `image.tag=${tag}`, "--set", "image.pullPolicy=Never"],
      ...["--set-json", `operator.nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`],
      ...["--set-json", `operator.tolerations=${JSON.stringify(onRealNode.tolerations)}`],
      ...["--set-json", `gateway.nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`],
      ...["--set-json", `gateway.tolerations=${JSON.stringify(onRealNode.tolerations)}`],
      ...["--set-json", `tests.nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`],
      ...["--set-json", `tests.tolerations=${JSON.stringify(onRealNode.tolerations)}`],
      ...["--set", "broker.enabled=true", "--set", `broker.image=${BROKER_IMAGE}`],
      ...["--set-json", `broker.nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`],
      ...["--set-json", `broker.tolerations=${JSON.stringify(onRealNode.tolerations)}`],
      ...["--set-json", 'broker.resources={"requests":{"cpu":"50m","memory":"64Mi"}}'],
      // The built-in cpu profile, replaced by one that lands on the real node and fits its two cores.
      ...[
        "--set-json",
        `operator.config.resourceProfiles=${JSON.stringify({ cpu: { ...onRealNode, cpu: "500m", memory: "1Gi" } })}`,
      ],
      ...["--set", `operator.config.hubUrl=http://${REAL_NODE_GATEWAY}:${hub.port}`],
      // One of each: the node has two cores, shared with the rest of the suite.
      ...["--set", "operator.replicas=1", "--set", "gateway.replicas=1"],
      ...["--set-json", 'operator.resources={"requests":{"cpu":"50m","memory":"128Mi"}}'],
      ...["--set-json", 'gateway.resources={"requests":{"cpu":"50m","memory":"128Mi"}}'],
    ],
    afterInstall: () => assertOnRealNode(target.releaseNs, 3),
    afterAnswer: queuedChat,
    // The host reaches ClusterIPs (the Service proxy), as the node's pods do.
    gatewayUrl: async () => {
      const svc = await kubeConfigFor(cp)
        .makeApiClient(CoreV1Api)
        .readNamespacedService({ name: `${target.release}-gateway`, namespace: target.releaseNs });
      return `http://${svc.spec?.clusterIP}:${svc.spec?.ports?.[0]?.port}`;
    },
  };
});

/** At least `min` pods in `ns`, every one on the real node with its containers run by containerd. */
async function assertOnRealNode(ns: string, min: number): Promise<void> {
  const pods = (await kubeConfigFor(cp).makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns })).items;
  assert.ok(pods.length >= min, `${pods.length} pods in ${ns}`);
  for (const p of pods) {
    assert.equal(p.spec?.nodeName, REAL_NODE, `${p.metadata?.name} runs on the real node`);
    for (const c of p.status?.containerStatuses ?? [])
      assert.match(c.containerID ?? "", /^containerd:\/\//, `${p.metadata?.name}/${c.name} is a container`);
  }
}

/** A chat completion through fal's queue API (the gateway's, on the chart's broker): submit, poll, result. */
async function queuedChat(o: { gateway: string; key: string; app: string; model: string }): Promise<void> {
  const base = `${o.gateway}/_queue/${target.org}/${o.app}`;
  const headers = { authorization: `Key ${o.key}`, "content-type": "application/json" };
  const submitted = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: o.model, messages: [{ role: "user", content: "hi" }], max_tokens: 8 }),
  });
  assert.equal(submitted.status, 200, await submitted.clone().text());
  const id = ((await submitted.json()) as { request_id: string }).request_id;
  for (let i = 0; ; i++) {
    const s = await fetch(`${base}/requests/${id}/status`, { headers });
    const status = ((await s.json()) as { status: string }).status;
    if (status === "COMPLETED") break;
    assert.match(status, /^IN_(QUEUE|PROGRESS)$/);
    assert.ok(i < 1500, `request ${id} still ${status} after 5 minutes`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const result = await fetch(`${base}/requests/${id}`, { headers });
  assert.equal(result.status, 200);
  const body = (await result.json()) as { choices: Array<{ message: { content: string } }> };
  assert.ok(body.choices[0]?.message.content.length, "the queued request's answer");
}

after(async () => {
  if (target) {
    const kubectl = kubectlOf(target);
    await helmOf(target)(["uninstall", target.release, "-n", target.releaseNs, "--ignore-not-found"]).catch(() => "");
    for (const ns of [target.org, target.releaseNs])
      await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => "");
  }
  await hub?.close(); // also when the set-up failed: an open hub server keeps the test file from ever exiting
});

test("helm install on the real node: the chart's pods run the image, find the API server and each other; helm test passes", async (t) => {
  await platformChecks(target, (line) => t.diagnostic(line));
  await assertOnRealNode(target.org, 1); // the app's model pod
});
