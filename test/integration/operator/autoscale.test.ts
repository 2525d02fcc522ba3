// Serverless scaling as the gateway drives it: an app at zero replicas wakes on a reported request, follows the
// in-flight load up to maxReplicas, and goes back to zero after scaleDownDelay without load.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { kubectl, loadReportToken, postLoad, startTestOperator, type TestOperator } from "../../support/operator.ts";
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

let c: OperatorCluster, op: TestOperator, ns: string, apps: AppsV1Api, token: string;

before(async () => {
  c = await operatorCluster();
  apps = c.kc.makeApiClient(AppsV1Api);
  ns = await createTestNamespace(c.kc, "org-scale");
  token = loadReportToken(c.cp);
  op = await startTestOperator(c.cp, {
    watchNamespace: ns,
    autoscaler: { intervalSeconds: 0.5, reportTtlSeconds: 30 },
    leaderElection: {
      name: "gantry-operator-autoscale-test",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
});

after(async () => {
  await op?.stop();
  await c?.kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: ns })
    .catch(() => undefined);
});

const report = async (gateway: string, inFlight: number, name = "burst") => {
  const r = await postLoad(op.url, token, { gateway, apps: [{ namespace: ns, name, inFlight }] });
  assert.equal(r.status, 204);
};
const deploymentReplicas = async (name = "burst") =>
  (await apps.readNamespacedDeployment({ name, namespace: ns })).spec?.replicas;
const waitReplicas = (n: number, timeoutMs = 30_000) =>
  eventually(
    `${n} replicas`,
    async () =>
      (await deploymentReplicas()) === n && (await readApp(c, ns, "burst")).spec.replicas === n ? true : undefined,
    timeoutMs,
  );

test("load reports need the token of an allowed ServiceAccount: none 401, another account 403", async () => {
  const body = { gateway: "intruder", apps: [{ namespace: ns, name: "burst", inFlight: 50 }] };
  const none = await postLoad(op.url, undefined, body);
  assert.equal(none.status, 401);
  assert.match(none.headers.get("www-authenticate") ?? "", /Bearer/);
  assert.equal((await postLoad(op.url, "not-a-token", body)).status, 401);
  const other = await postLoad(op.url, loadReportToken(c.cp, "some-pod"), body);
  assert.equal(other.status, 403);
  assert.match(((await other.json()) as { error: string }).error, /system:serviceaccount:gantry-system:some-pod/);
  assert.equal(await op.metric("gantry_operator_app_in_flight_requests", { namespace: ns, app: "burst" }), 0);
});

test("an idle app sits at zero replicas and is Ready (the gateway wakes it)", async () => {
  await createApp(
    c,
    modelApp(ns, "burst", {
      model: "hf.co/acme/tiny:Q8_0",
      scaling: { minReplicas: 0, maxReplicas: 3, targetConcurrency: 2, scaleDownDelay: "3s" },
    }),
  );
  const app = await waitForCondition(c, ns, "burst", "Ready", "True", "ScaledToZero");
  assert.equal(condition(app, "Scheduled")?.reason, "NoReplicas");
  assert.equal(await deploymentReplicas(), 0);
});

test("a request held by the gateway wakes the app from zero; load from two gateways adds up; no load scales back to zero after the delay", async () => {
  await report("gw-a", 1);
  await waitReplicas(1);
  await waitForCondition(c, ns, "burst", "Ready", "True", "Serving");

  await report("gw-a", 3);
  await report("gw-b", 2); // 5 in flight / 2 per replica → 3
  assert.equal(
    await op.metric("gantry_operator_app_in_flight_requests", { namespace: ns, app: "burst" }),
    5,
    "summed over the gateways",
  );
  await waitReplicas(3);
  await report("gw-a", 40); // capped at maxReplicas
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await deploymentReplicas(), 3);

  await report("gw-a", 0);
  await report("gw-b", 0);
  const idleSince = Date.now();
  await waitReplicas(0, 30_000);
  assert.ok(Date.now() - idleSince >= 2500, "not before scaleDownDelay (3s)");
  await waitForCondition(c, ns, "burst", "Ready", "True", "ScaledToZero");
  const events = kubectl(c.cp, [
    "get",
    "events",
    "-n",
    ns,
    "--field-selector",
    "involvedObject.name=burst",
    "-o",
    "jsonpath={.items[*].reason}",
  ]);
  assert.match(events, /ScaledUp/);
  assert.match(events, /ScaledDown/);
  assert.ok((await op.metric("gantry_operator_autoscaler_scales_total", { direction: "up" })) >= 2);
});

test("minReplicas is a floor the autoscaler keeps without load", async () => {
  kubectl(c.cp, [
    "patch",
    "modelapp",
    "burst",
    "-n",
    ns,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { scaling: { minReplicas: 1 } } }),
  ]);
  await waitReplicas(1);
  await new Promise((r) => setTimeout(r, 4000));
  assert.equal(await deploymentReplicas(), 1, "stays at the floor after scaleDownDelay");
});
