// The operator at scale on the test control plane: N ModelApps applied at once (one `kubectl apply` of a List), the
// time until every app is reconciled (its Deployment, Service and model volume exist and its status describes the
// current generation), reconcile duration quantiles from the operator's own histogram, and the API writes it makes
// over a quiet minute afterwards (target: none; lease renewals, inherent to leader election, are shown apart).
// Also runnable: `node test/bench/operator.ts [apps] [steadySeconds]`.
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../cluster/test-cluster.ts";
import { installCrd, kubectl, kubectlResult, startTestOperator } from "../support/operator.ts";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../../operator/api/v1alpha1/modelapp.ts";
import { printTable } from "./table.ts";

export interface OperatorBenchResult {
  apps: number;
  reconcileAllSeconds: number;
  p50Ms: number;
  p99Ms: number;
  reconciles: number;
  writesDuringApply: number;
  steadySeconds: number;
  steadyWrites: number;
  steadyLeaseWrites: number;
  steadyReconciles: number;
}

/** histogram_quantile over a prom-client histogram's text exposition. */
export function histogramQuantile(text: string, name: string, q: number): number {
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))].map((m) => ({
    le: m[1] === "+Inf" ? Infinity : Number(m[1]),
    n: Number(m[2]),
  }));
  const total = buckets.at(-1)?.n ?? 0;
  if (total === 0) return Number.NaN;
  const rank = q * total;
  let prevLe = 0,
    prevN = 0;
  for (const b of buckets) {
    if (b.n >= rank) {
      if (b.le === Infinity) return prevLe;
      return prevLe + (b.le - prevLe) * ((rank - prevN) / Math.max(1, b.n - prevN));
    }
    prevLe = b.le;
    prevN = b.n;
  }
  return prevLe;
}

const counter = (text: string, name: string, filter: (labels: string) => boolean = () => true): number =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, "gm"))]
    .filter((m) => filter(m[1] ?? ""))
    .reduce((s, m) => s + Number(m[2]), 0);

export async function benchOperator(
  opts: { apps?: number; steadySeconds?: number } = {},
): Promise<OperatorBenchResult> {
  const n = opts.apps ?? 200,
    steadySeconds = opts.steadySeconds ?? 60;
  const cp = await ensureTestCluster();
  installCrd(cp);
  kubectlResult(cp, ["create", "namespace", "gantry-system"]);
  const kc = kubeConfigFor(cp);
  const core = kc.makeApiClient(CoreV1Api),
    appsApi = kc.makeApiClient(AppsV1Api),
    custom = kc.makeApiClient(CustomObjectsApi);
  const ns = await createTestNamespace(kc, "bench-operator");
  const op = await startTestOperator(
    cp,
    { watchNamespace: ns, workers: 4, leaderElection: { name: `gantry-operator-bench-${ns}` } },
    { env: { GANTRY_LOG_LEVEL: "warn" } },
  );
  try {
    await new Promise((r) => setTimeout(r, 3000)); // leadership
    const items = Array.from({ length: n }, (_, i) => ({
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "ModelApp",
      metadata: { name: `app-${String(i).padStart(3, "0")}`, namespace: ns },
      spec: {
        model: `hf.co/bench/model-${i % 10}-GGUF:Q4_K_M`,
        scaling: { minReplicas: 1 },
        modelVolume: { name: `models-${i % 20}` },
      },
    }));
    const t0 = Date.now();
    kubectl(cp, ["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    for (;;) {
      const [list, deployments, services, claims] = await Promise.all([
        custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: PLURAL,
        }) as Promise<{ items: ModelApp[] }>,
        appsApi.listNamespacedDeployment({ namespace: ns }),
        core.listNamespacedService({ namespace: ns }),
        core.listNamespacedPersistentVolumeClaim({ namespace: ns }),
      ]);
      const reconciled = list.items.filter(
        (a) => a.status?.observedGeneration === a.metadata.generation && a.status?.conditions?.length,
      ).length;
      if (
        reconciled === n &&
        deployments.items.length === n &&
        services.items.length === n &&
        claims.items.length === 20
      )
        break;
      if (Date.now() - t0 > 600_000) throw new Error(`not reconciled after 10 minutes: ${reconciled}/${n} statuses`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const reconcileAllSeconds = (Date.now() - t0) / 1000;
    // Pods start (kwok), statuses settle to Ready; then the minute of quiet.
    for (let stable = 0; stable < 3;) {
      const before = await op.metrics();
      await new Promise((r) => setTimeout(r, 2000));
      const after = await op.metrics();
      stable =
        counter(before, "gantry_operator_reconciles_total") === counter(after, "gantry_operator_reconciles_total")
          ? stable + 1
          : 0;
    }
    const settled = await op.metrics();
    const isWrite = (l: string) => !l.includes('verb="get"') && !l.includes('resource="leases"');
    const isLeaseWrite = (l: string) => !l.includes('verb="get"') && l.includes('resource="leases"');
    await new Promise((r) => setTimeout(r, steadySeconds * 1000));
    const end = await op.metrics();
    return {
      apps: n,
      reconcileAllSeconds,
      p50Ms: histogramQuantile(end, "gantry_operator_reconcile_duration_seconds", 0.5) * 1000,
      p99Ms: histogramQuantile(end, "gantry_operator_reconcile_duration_seconds", 0.99) * 1000,
      reconciles: counter(end, "gantry_operator_reconciles_total"),
      writesDuringApply: counter(settled, "gantry_operator_kube_requests_total", isWrite),
      steadySeconds,
      steadyWrites:
        counter(end, "gantry_operator_kube_requests_total", isWrite) -
        counter(settled, "gantry_operator_kube_requests_total", isWrite),
      steadyLeaseWrites:
        counter(end, "gantry_operator_kube_requests_total", isLeaseWrite) -
        counter(settled, "gantry_operator_kube_requests_total", isLeaseWrite),
      steadyReconciles:
        counter(end, "gantry_operator_reconciles_total") - counter(settled, "gantry_operator_reconciles_total"),
    };
  } finally {
    await op.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
}

export function printOperatorTable(r: OperatorBenchResult): void {
  printTable(
    `Operator: ${r.apps} ModelApps applied at once (kwok nodes; one replica each), then ${r.steadySeconds} s of steady state`,
    [
      "apps",
      "all reconciled s",
      "reconcile p50 ms",
      "reconcile p99 ms",
      "reconciles",
      "writes until settled",
      `writes in ${r.steadySeconds} s steady`,
      "lease renewals (same window)",
      "reconciles in steady window",
    ],
    [
      [
        r.apps,
        r.reconcileAllSeconds,
        r.p50Ms,
        r.p99Ms,
        r.reconciles,
        r.writesDuringApply,
        r.steadyWrites,
        r.steadyLeaseWrites,
        r.steadyReconciles,
      ],
    ],
  );
}

if (import.meta.main) {
  printOperatorTable(
    await benchOperator({ apps: Number(process.argv[2] ?? 200), steadySeconds: Number(process.argv[3] ?? 60) }),
  );
}
