// Two operator replicas: one Lease holder reconciles, the other waits with warm caches and takes over when the
// leader is killed (after the lease expires) or hands the lease back on a graceful stop (at once).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppsV1Api, CoordinationV1Api, CoreV1Api } from "@kubernetes/client-node";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startTestOperator, type TestOperator } from "../../support/operator.ts";
import { createApp, eventually, modelApp, operatorCluster, waitForCondition, type OperatorCluster } from "./helpers.ts";

let c: OperatorCluster, ns: string, apps: AppsV1Api, leases: CoordinationV1Api;
const running: TestOperator[] = [];
const LEASE = "gantry-operator-leader-test";

before(async () => {
  c = await operatorCluster();
  apps = c.kc.makeApiClient(AppsV1Api);
  leases = c.kc.makeApiClient(CoordinationV1Api);
  ns = await createTestNamespace(c.kc, "org-ha");
  await leases.deleteNamespacedLease({ name: LEASE, namespace: "gantry-system" }).catch(() => undefined);
});

after(async () => {
  await Promise.all(running.map((o) => o.stop()));
  await c?.kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: ns })
    .catch(() => undefined);
});

const start = async (): Promise<TestOperator> => {
  const op = await startTestOperator(c.cp, {
    watchNamespace: ns,
    leaderElection: {
      enabled: true,
      namespace: "gantry-system",
      name: LEASE,
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
  running.push(op);
  return op;
};
const isLeader = async (op: TestOperator) => (await op.metric("gantry_operator_leader")) === 1;
const holder = async () =>
  (await leases.readNamespacedLease({ name: LEASE, namespace: "gantry-system" })).spec?.holderIdentity;

test("two replicas elect one leader; killing it hands reconciling to the other", async () => {
  const [a, b] = await Promise.all([start(), start()]);
  const leader = await eventually(
    "one leader",
    async () => {
      const flags = await Promise.all([isLeader(a!), isLeader(b!)]);
      return flags.filter(Boolean).length === 1 ? (flags[0] ? a! : b!) : undefined;
    },
    20_000,
  );
  const standby = leader === a ? b! : a!;
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(await isLeader(standby), false, "still exactly one leader after a few renewals");
  await createApp(c, modelApp(ns, "one", { model: "hf.co/acme/tiny:Q8_0", scaling: { minReplicas: 1 } }));
  await waitForCondition(c, ns, "one", "Ready", "True");
  assert.equal(await standby.metric("gantry_operator_reconciles_total"), 0, "the standby never reconciles");

  const killedAt = Date.now();
  await leader.stop("SIGKILL");
  await eventually("the standby to lead", async () => ((await isLeader(standby)) ? true : undefined), 30_000);
  const tookMs = Date.now() - killedAt;
  assert.ok(tookMs >= 2000, `waited for the dead leader's lease to expire (${tookMs} ms)`);
  await createApp(c, modelApp(ns, "two", { model: "hf.co/acme/tiny:Q8_0", scaling: { minReplicas: 1 } }));
  await waitForCondition(c, ns, "two", "Ready", "True");
  assert.equal((await apps.readNamespacedDeployment({ name: "two", namespace: ns })).spec?.replicas, 1);
});

test("a leader stopped with SIGTERM releases the lease, so a new replica leads without waiting for it to expire", async () => {
  const current = running.find((o) => o.proc.exitCode === null && o.proc.signalCode === null)!;
  assert.ok(await isLeader(current));
  assert.equal(await current.stop("SIGTERM"), 0);
  assert.equal(await holder(), "", "the lease was handed back");
  const next = await start();
  const t0 = Date.now();
  await eventually("the new replica to lead", async () => ((await isLeader(next)) ? true : undefined), 10_000);
  assert.ok(Date.now() - t0 < 3500, "well before a 4 s lease would have expired");
});
