// `helm install` to a working platform on the test control plane: the operator and the gateway run as pods (the process
// runtime runs them as this checkout's `gantry`, with in-cluster config: the pods' service-account token and the
// apiserver behind the kubernetes Service), model pods pull the tiny model from a local hub, and the checks are the
// ones the kind script runs (test/support/platform-e2e.ts).
import path from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { helmOf, kubectlOf, platformChecks, type PlatformTarget } from "../../support/platform-e2e.ts";
import { GANTRY, REPO } from "../../support/server.ts";

let cp: ControlPlane, hub: HubServer, target: PlatformTarget;
const suffix = Math.random().toString(36).slice(2, 7);
const label = PROCESS_RUNTIME_LABEL.replaceAll(".", "\\.");

before(async () => {
  cp = await ensureTestCluster();
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "acme",
    repo: "tiny-chat-GGUF",
    files: { "tiny-chat-Q8_0.gguf": await tinyModelPath() },
  });
  target = {
    kubeconfig: cp.kubeconfig,
    binDir: cp.binDir,
    chart: path.join(REPO, "charts", "gantry"),
    release: `gantry-${suffix}`,
    releaseNs: `gantry-helm-${suffix}`,
    org: `acme-helm-${suffix}`,
    model: "hf.co/acme/tiny-chat-GGUF:Q8_0",
    readyTimeout: "300s",
    gantry: [process.execPath, GANTRY],
    installArgs: [
      // Pods of the chart and of the apps run as processes; nothing is pulled (the runtime runs this checkout).
      "--set-string",
      `operator.podLabels.${label}=true`,
      "--set-string",
      `gateway.podLabels.${label}=true`,
      "--set-string",
      `tests.podLabels.${label}=true`,
      "--set-string",
      `operator.config.podLabels.${label}=true`,
      "--set",
      `operator.config.hubUrl=http://${POD_GATEWAY}:${hub.port}`,
      "--set",
      "operator.replicas=2",
      "--set",
      "gateway.replicas=2",
    ],
    // The host reaches ClusterIPs (the runtime's Service proxy), as a pod does.
    gatewayUrl: async () => {
      const svc = await kubeConfigFor(cp)
        .makeApiClient(CoreV1Api)
        .readNamespacedService({ name: `${target.release}-gateway`, namespace: target.releaseNs });
      return `http://${svc.spec?.clusterIP}:${svc.spec?.ports?.[0]?.port}`;
    },
  };
});

after(async () => {
  const kubectl = kubectlOf(target);
  // A failed run still removes the release's cluster-wide objects (ClusterRoles); the CRD stays, as it would.
  await helmOf(target)(["uninstall", target.release, "-n", target.releaseNs, "--ignore-not-found"]).catch(() => "");
  for (const ns of [target.org, target.releaseNs]) {
    try {
      await kubectl(["delete", "namespace", ns, "--wait=false"]);
    } catch {
      /* never created */
    }
  }
  await hub?.close();
});

test("helm install to a working platform, helm test, upgrade and uninstall", async (t) => {
  await platformChecks(target, (line) => t.diagnostic(line));
});
