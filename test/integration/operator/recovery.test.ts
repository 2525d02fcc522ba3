// Watches that fail recover by themselves: an operator started before it may read anything (its ServiceAccount has no
// permissions yet) keeps retrying its lists with backoff, stays not-ready meanwhile, and starts reconciling as soon as
// the permissions are granted — no restart needed.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { kubectl, startTestOperator, type TestOperator } from "../../support/operator.ts";
import { createApp, eventually, modelApp, operatorCluster, waitForCondition, type OperatorCluster } from "./helpers.ts";

let c: OperatorCluster, ns: string, op: TestOperator | undefined, binding: string;

before(async () => {
  c = await operatorCluster();
  ns = await createTestNamespace(c.kc, "org-late");
  binding = `gantry-late-${ns}`;
});

after(async () => {
  await op?.stop();
  await c?.kc
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteClusterRoleBinding({ name: binding })
    .catch(() => undefined);
  await c?.kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: ns })
    .catch(() => undefined);
});

test("an operator without permissions retries its watches and recovers once they are granted", async () => {
  await c.kc
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "late" } } });
  const token = kubectl(c.cp, ["create", "token", "late", "-n", ns, "--duration=1h"]).trim();
  const admin = parse(fs.readFileSync(c.cp.kubeconfig, "utf8")) as { clusters: Array<{ name: string }> };
  const kubeconfig = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-late-")), "kubeconfig");
  fs.writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: admin.clusters,
      "current-context": "late",
      contexts: [{ name: "late", context: { cluster: admin.clusters[0]!.name, user: "late" } }],
      users: [{ name: "late", user: { token } }],
    }),
  );
  op = await startTestOperator(
    { kubeconfig },
    { watchNamespace: ns, leaderElection: { name: `gantry-late-${ns}`, namespace: ns } },
    { waitReady: false },
  );
  // Its first watch fails however long the process takes to start (not a check 3 s after the spawn).
  await eventually("a failed watch", async () => (/watch failed; restarting/.test(op!.logs()) ? true : undefined));
  assert.equal((await fetch(`${op.url}/readyz`)).status, 503, "not ready while nothing can be listed");

  await c.kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
    body: {
      metadata: { name: binding },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "ServiceAccount", name: "late", namespace: ns }],
    },
  });
  await eventually(
    "the operator to become ready",
    async () => ((await fetch(`${op!.url}/readyz`)).status === 200 ? true : undefined),
    90_000,
  );
  await createApp(c, modelApp(ns, "late-app", { model: "hf.co/acme/tiny:Q8_0", scaling: { minReplicas: 1 } }));
  await waitForCondition(c, ns, "late-app", "Ready", "True", "Serving");
});
