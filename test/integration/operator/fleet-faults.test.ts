// Faults at fleet scale, on a control plane of this file's own (its API server is killed, which no other test may
// see): a few hundred ModelApps converge with nothing made twice when the API server is killed and restarted
// mid-reconcile; an operator restarted with the fleet reconciled, and a standby taking over from a killed leader,
// catch up without writing anything. The same at 2,000 apps, timed: `npm run bench operator`.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { KubeConfig } from "@kubernetes/client-node";
import { apiserverReady, startControlPlane, type ControlPlane } from "../../cluster/control-plane.ts";
import { restartRecorded, waitFor } from "../../cluster/processes.ts";
import { createTestNamespace, kubeConfigFor } from "../../cluster/test-cluster.ts";
import { addFleetNodes, auditFleet, createFleet, FleetWatch } from "../../support/fleet.ts";
import { installCrd, kubectl, startTestOperator, type TestOperator } from "../../support/operator.ts";
import { eventually } from "./helpers.ts";

const APPS = 200;
const TIMEOUT = 300_000;
let cp: ControlPlane, kc: KubeConfig, ns: string, watch: FleetWatch;
const running: TestOperator[] = [];

before(async () => {
  cp = await startControlPlane();
  installCrd(cp);
  kubectl(cp, ["create", "namespace", "gantry-system"]);
  kc = kubeConfigFor(cp);
  await addFleetNodes(kc, APPS);
  ns = await createTestNamespace(kc, "fleet-faults");
  watch = new FleetWatch(kc, ns);
  await watch.start();
});

after(async () => {
  await watch?.stop().catch(() => undefined);
  await Promise.all(running.map((o) => o.stop()));
  await cp?.stop();
});

const start = async (election: boolean): Promise<TestOperator> => {
  const lease = { namespace: "gantry-system", name: "fleet", leaseDurationSeconds: 4, renewDeadlineSeconds: 3 };
  const op = await startTestOperator(
    cp,
    {
      watchNamespace: ns,
      leaderElection: election ? { enabled: true, ...lease, retryPeriodSeconds: 1 } : { enabled: false },
    },
    { env: { GANTRY_LOG_LEVEL: "info" } },
  );
  running.push(op);
  return op;
};
const alive = (op: TestOperator) => op.proc.exitCode === null && op.proc.signalCode === null;
const isLeader = async (op: TestOperator) => alive(op) && (await op.metric("gantry_operator_leader")) === 1;
/** Every app reconciled at least once by this operator and nothing queued: it has caught up. */
const caughtUp = async (op: TestOperator) =>
  (await op.metric("gantry_operator_reconciles_total")) >= APPS &&
  (await op.metric("gantry_operator_workqueue_depth")) === 0
    ? true
    : undefined;

test(`the API server killed mid-reconcile of ${APPS} apps: they converge, nothing made twice`, async () => {
  const op = await start(false);
  await createFleet(kc, ns, 0, APPS);
  await watch.until("a quarter reconciled", (c) => c.reconciled >= APPS / 4, { timeoutMs: TIMEOUT });
  const atKill = watch.counts().reconciled;
  await restartRecorded(cp.dir, "kube-apiserver", "SIGKILL");
  await waitFor("the API server back", () => apiserverReady(cp), 120_000, cp.dir); // throws with the logs' tails
  await watch.until("the fleet Ready", (c) => c.reconciled === APPS && c.ready === APPS, { timeoutMs: TIMEOUT });
  assert.ok(atKill < APPS, `killed mid-reconcile (${atKill} of ${APPS} reconciled then)`);
  assert.ok(alive(op), "the operator rode it out");
  assert.match(op.logs(), /watch failed; restarting/, "its watches saw the API server go");
  assert.deepEqual((await auditFleet(kc, ns, APPS)).problems, []);
  await op.stop();
});

test(`a restart and a leader handover at ${APPS} reconciled apps catch up without a write`, async () => {
  const [a, b] = [await start(true), await start(true)];
  const leader = await eventually("one leader", async () =>
    (await isLeader(a)) ? a : (await isLeader(b)) ? b : undefined,
  );
  await eventually("the new leader to catch up", () => caughtUp(leader), TIMEOUT);
  assert.equal(await leader.writes(), 0, "a restarted operator finds everything in place");
  const standby = leader === a ? b : a;
  assert.equal(await standby.metric("gantry_operator_reconciles_total"), 0, "the standby never reconciles");

  await leader.stop("SIGKILL");
  await eventually("the standby to lead", async () => ((await isLeader(standby)) ? true : undefined), 30_000);
  await eventually("the standby to catch up", () => caughtUp(standby), TIMEOUT);
  assert.equal(await standby.writes(), 0, "the new leader writes nothing: no storm");
  assert.deepEqual((await auditFleet(kc, ns, APPS)).problems, []);
});
