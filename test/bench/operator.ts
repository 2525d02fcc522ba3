// The operator at fleet scale: for each fleet size (100, 500 and 2,000 ModelApps by default), a fresh test control
// plane with enough kwok nodes for one pod per app, the apps created at once, and: the time until every app is
// reconciled (its status describes its current generation, written after its objects were applied), reconcile p50/p99
// from the operator's own histogram, its API writes and requests until the fleet settles (every app Ready, no
// reconcile for 6 s), its writes in a quiet minute and its resident memory. Then a restart row: the operator restarted
// with the largest fleet reconciled, its time to caught up (every app reconciled once, queue empty) and its writes
// (target 0), and a handover row: two replicas on one Lease, the leader stopped, the standby's time to caught up and
// its writes (target 0). Every wait has a deadline and prints progress: a bench never hangs silently.
// `npm run bench operator`; or `node test/bench/operator.ts [sizes, e.g. 100,500,2000] [quietSeconds]`.
// GANTRY_BENCH_FLEET_SIZES (e.g. 100,500) and GANTRY_BENCH_QUIET_SECONDS (default 60) change the runs;
// GANTRY_BENCH_FLEET_EXTRA_ROWS=0 leaves out the restart, handover and gateway rows (one size per run on a busy host);
// GANTRY_BENCH_CPU_PROF=<dir> writes the operator's CPU profiles there (node --cpu-prof);
// GANTRY_BENCH_OPERATOR_WORKERS sets the operator's `workers` (default: the operator's own).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startControlPlane, type ControlPlane } from "../cluster/control-plane.ts";
import { readRecorded } from "../cluster/processes.ts";
import { createTestNamespace, kubeConfigFor } from "../cluster/test-cluster.ts";
import { addFleetNodes, auditFleet, createFleet, fleetAppName, FleetWatch } from "../support/fleet.ts";
import { GatewayProbe, type ProbeLatency } from "./gateway/fleet.ts";
import { installCrd, startTestOperator, sumMetricWhere, type TestOperator } from "../support/operator.ts";
import { processCpuMs } from "./process-cpu.ts";
import { printTable } from "./table.ts";

export interface OperatorBenchRow {
  label: string;
  apps: number;
  /** Seconds until every app was reconciled (restart row: until caught up). */
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  reconciles: number;
  writes: number;
  requests: number;
  quietSeconds: number;
  quietWrites: number;
  rssMb: number;
  /** V8's used heap: what of the RSS is JavaScript objects (the rest: code, native buffers, freed pages kept). */
  heapMb: number;
  load: string;
  /** CPU seconds by process from the first create until all were reconciled: where the 2 cores went. */
  cpu?: string;
  problems: string[];
}

/**
 * The API server's slowest kinds of request so far, by total time ("APPLY services 2000 × 441 ms, …"): a kind the API
 * server serves one at a time shows here first (ClusterIP allocation did: docs/decisions/0017).
 */
function slowestRequests(cp: ControlPlane, top = 4): string {
  let text: string;
  try {
    text = execFileSync(path.join(cp.binDir, "kubectl"), ["--kubeconfig", cp.kubeconfig, "get", "--raw", "/metrics"], {
      encoding: "utf8",
      maxBuffer: 256 * 2 ** 20, // a few MB at 2,000 apps
    });
  } catch (err) {
    return `unknown (${String(err).split("\n")[0]})`;
  }
  const rows = new Map<string, { sum: number; count: number }>();
  for (const m of text.matchAll(/^apiserver_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const label = (k: string) => new RegExp(`(?:^|,)${k}="([^"]*)"`).exec(m[2]!)?.[1] ?? "";
    if (label("verb") === "WATCH") continue;
    const sub = label("subresource");
    const key = `${label("verb")} ${label("resource")}${sub ? `/${sub}` : ""}`;
    const row = rows.get(key) ?? { sum: 0, count: 0 };
    row[m[1] as "sum" | "count"] += Number(m[3]);
    rows.set(key, row);
  }
  return [...rows]
    .sort((a, b) => b[1].sum - a[1].sum)
    .slice(0, top)
    .map(([k, r]) => `${k} ${r.count} × ${((r.sum / Math.max(1, r.count)) * 1000).toFixed(0)} ms`)
    .join(", ");
}

/** CPU milliseconds so far of the control plane's processes, the operator and this bench, by name. */
function cpuNow(cp: ControlPlane, op: TestOperator): Map<string, number> {
  const out = new Map<string, number>();
  const read = (name: string, pid: number | undefined) => {
    try {
      if (pid) out.set(name, processCpuMs(pid));
    } catch {
      /* exited */
    }
  };
  for (const p of readRecorded(cp.dir)) read(p.name, p.pid);
  read("operator", op.proc.pid);
  const self = process.cpuUsage();
  out.set("bench", (self.user + self.system) / 1000);
  return out;
}

/** "kube-apiserver 120.3, … (total 230.1 CPU s)": the CPU each process spent between two readings, most first. */
function cpuSpent(before: Map<string, number>, after: Map<string, number>): string {
  const spent = [...after].map(([name, ms]) => [name, (ms - (before.get(name) ?? 0)) / 1000] as const);
  spent.sort((a, b) => b[1] - a[1]);
  const total = spent.reduce((sum, [, s]) => sum + s, 0);
  return `${spent.map(([name, s]) => `${name} ${s.toFixed(1)}`).join(", ")} (total ${total.toFixed(1)} CPU s)`;
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

const REQUESTS = "gantry_operator_kube_requests_total";
/** Requests outside watches, lease renewals left out (inherent to leader election, not to the fleet). */
const requests = (text: string) => sumMetricWhere(text, REQUESTS, (l) => l.resource !== "leases");
const writes = (text: string) => sumMetricWhere(text, REQUESTS, (l) => l.verb !== "get" && l.resource !== "leases");
/** "apply deployments 100, …": where the writes went, for the log. */
function writesByKind(text: string): string {
  const by = new Map<string, number>();
  sumMetricWhere(text, REQUESTS, (l) => {
    if (l.verb !== "get" && l.resource !== "leases") by.set(`${l.verb} ${l.resource}`, 0);
    return false;
  });
  for (const k of by.keys()) {
    const [verb, resource] = k.split(" ");
    by.set(
      k,
      sumMetricWhere(text, REQUESTS, (l) => l.verb === verb && l.resource === resource),
    );
  }
  return [...by].map(([k, v]) => `${k} ${v}`).join(", ");
}
const reconcilesOf = (text: string) => sumMetricWhere(text, "gantry_operator_reconciles_total", () => true);
const gauge = (text: string, name: string) => sumMetricWhere(text, name, () => true);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => process.stderr.write(`bench operator: ${line}\n`);
const loadavg = () => os.loadavg()[0]!.toFixed(1);

/** Waits until `check` holds, printing progress; throws with the last progress line after timeoutMs. */
async function waitUntil(what: string, check: () => Promise<string | true>, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  let last = 0;
  for (;;) {
    const r = await check();
    if (r === true) return;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}: ${r}`);
    if (Date.now() - last > 10_000) {
      last = Date.now();
      log(`${what}: ${r} (${((Date.now() - t0) / 1000).toFixed(0)} s, load ${loadavg()})`);
    }
    await sleep(500);
  }
}

/** Until no reconcile ran for three samples 2 s apart and the queue is empty. */
async function settle(op: TestOperator, timeoutMs: number): Promise<string> {
  let stable = 0,
    prev = -1,
    text = "";
  await waitUntil(
    "the operator to settle",
    async () => {
      text = await op.metrics();
      const n = reconcilesOf(text),
        depth = gauge(text, "gantry_operator_workqueue_depth");
      stable = n === prev && depth === 0 ? stable + 1 : 0;
      prev = n;
      if (stable >= 3) return true;
      await sleep(1500);
      return `${n} reconciles, queue ${depth}`;
    },
    timeoutMs,
  );
  return text;
}

/** Until the operator has reconciled every app once and its queue is empty (a new leader or a restart caught up). */
async function caughtUp(op: TestOperator, who: string, n: number, timeoutMs: number): Promise<void> {
  await waitUntil(
    `${who} to catch up`,
    async () => {
      const text = await op.metrics();
      const done = reconcilesOf(text),
        depth = gauge(text, "gantry_operator_workqueue_depth");
      return done >= n && depth === 0 ? true : `${done}/${n} reconciled, queue ${depth}`;
    },
    timeoutMs,
  );
}

/** The operator alone, or (with `lease`) one of several replicas campaigning for that Lease in the namespace. */
const startOperator = (cp: ControlPlane, ns: string, profDir: string | undefined, lease?: string) =>
  startTestOperator(
    cp,
    {
      watchNamespace: ns,
      leaderElection: lease ? { enabled: true, namespace: ns, name: lease } : { enabled: false },
      ...(process.env.GANTRY_BENCH_OPERATOR_WORKERS
        ? { workers: Number(process.env.GANTRY_BENCH_OPERATOR_WORKERS) }
        : {}),
    },
    {
      env: {
        GANTRY_LOG_LEVEL: "warn",
        ...(profDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profDir}` } : {}),
      },
    },
  );

function row(
  label: string,
  apps: number,
  seconds: number,
  settled: string,
  end: string,
  quietSeconds: number,
): OperatorBenchRow {
  const h = "gantry_operator_reconcile_duration_seconds";
  return {
    label,
    apps,
    seconds,
    p50Ms: histogramQuantile(settled, h, 0.5) * 1000,
    p99Ms: histogramQuantile(settled, h, 0.99) * 1000,
    reconciles: reconcilesOf(settled),
    writes: writes(settled),
    requests: requests(settled),
    quietSeconds,
    quietWrites: writes(end) - writes(settled),
    rssMb: gauge(end, "gantry_operator_process_process_resident_memory_bytes") / 2 ** 20,
    heapMb: gauge(end, "gantry_operator_process_nodejs_heap_size_used_bytes") / 2 ** 20,
    load: loadavg(),
    problems: [] as string[],
  };
}

export interface GatewayFleetResult {
  one?: ProbeLatency;
  fleet?: ProbeLatency;
  /** Fleet apps the gateway knew once the fleet was reconciled. */
  known?: number;
  apps: number;
  problem?: string;
}

/**
 * One fleet size on a fresh control plane; with `restart`, also the restart row; with `gateway`, the gateway's
 * latency to a probe app with 1 app and with the fleet in its table.
 */
export async function benchFleet(
  n: number,
  o: { quietSeconds: number; restart: boolean; timeoutMs: number; gateway?: GatewayFleetResult },
): Promise<OperatorBenchRow[]> {
  const profDir = process.env.GANTRY_BENCH_CPU_PROF;
  if (profDir) fs.mkdirSync(profDir, { recursive: true });
  log(`${n} apps: starting a fresh control plane (load ${loadavg()})`);
  const cp = await startControlPlane();
  let op: TestOperator | undefined, watch: FleetWatch | undefined, probe: GatewayProbe | undefined;
  const gatewayStep = async (step: (p: GatewayProbe) => Promise<void>) => {
    if (!o.gateway || o.gateway.problem) return;
    try {
      await step(probe!);
    } catch (err) {
      o.gateway.problem = String(err).split("\n")[0];
      log(`gateway: ${o.gateway.problem}`);
    }
  };
  try {
    installCrd(cp);
    const kc = kubeConfigFor(cp);
    const nodes = await addFleetNodes(kc, n);
    const ns = await createTestNamespace(kc, "fleet");
    op = await startOperator(cp, ns, profDir);
    watch = new FleetWatch(kc, ns);
    await watch.start();
    await gatewayStep(async () => {
      probe = await GatewayProbe.start(cp, kc);
      o.gateway!.one = await probe.measure(1);
    });
    const cpu0 = cpuNow(cp, op);
    const t0 = Date.now();
    log(`${n} apps: creating them (${nodes} extra nodes)`);
    await createFleet(kc, ns, 0, n);
    const created = (Date.now() - t0) / 1000;
    log(`${n} apps created in ${created.toFixed(1)} s (the bench's creates, 8 at a time, share the API server)`);
    const progress = (line: string) => log(`${line} (load ${loadavg()})`);
    await watch.until(`${n} apps`, (c) => c.reconciled === n, { timeoutMs: o.timeoutMs, progress });
    const seconds = (Date.now() - t0) / 1000;
    const cpu = cpuSpent(cpu0, cpuNow(cp, op));
    log(
      `${n} apps reconciled in ${seconds.toFixed(1)} s from the first create, ` +
        `${(seconds - created).toFixed(1)} s after the last; CPU seconds meanwhile: ${cpu}; ` +
        `the API server's slowest requests: ${slowestRequests(cp)}; waiting for their pods to be Ready`,
    );
    await watch.until(`${n} apps Ready`, (c) => c.ready === n, { timeoutMs: o.timeoutMs, progress });
    const settled = await settle(op, o.timeoutMs);
    log(`settled; writes by verb and resource: ${writesByKind(settled)}; ${o.quietSeconds} s of quiet`);
    await sleep(o.quietSeconds * 1000);
    const rows = [row(`${n} apps`, n, seconds, settled, await op.metrics(), o.quietSeconds)];
    rows[0]!.problems = (await auditFleet(kc, ns, n)).problems;
    rows[0]!.cpu = cpu;
    await gatewayStep(async (p) => {
      o.gateway!.known = await p.known(
        ns,
        Array.from({ length: n }, (_, i) => fleetAppName(i)),
      );
      o.gateway!.fleet = await p.measure(n + 1);
    });
    if (o.restart) {
      await op.stop();
      log(`${n} apps: restarting the operator`);
      const t1 = Date.now();
      op = await startOperator(cp, ns, profDir);
      await caughtUp(op, "the restarted operator", n, o.timeoutMs);
      const restarted = (Date.now() - t1) / 1000;
      const after = await settle(op, o.timeoutMs);
      await sleep(o.quietSeconds * 1000);
      rows.push(row(`restart at ${n}`, n, restarted, after, await op.metrics(), o.quietSeconds));

      // Two replicas on one Lease; the leader stops (releasing the Lease) and the standby, its caches warm, takes over.
      await op.stop();
      log(`${n} apps: two replicas, then a leader handover`);
      op = await startOperator(cp, ns, profDir, "fleet-bench");
      await caughtUp(op, "the first leader", n, o.timeoutMs);
      const standby = await startOperator(cp, ns, profDir, "fleet-bench");
      const t2 = Date.now();
      await op.stop();
      op = standby;
      await caughtUp(op, "the new leader", n, o.timeoutMs);
      const tookOver = (Date.now() - t2) / 1000;
      const handedOver = await settle(op, o.timeoutMs);
      await sleep(o.quietSeconds * 1000);
      rows.push(row(`handover at ${n}`, n, tookOver, handedOver, await op.metrics(), o.quietSeconds));
    }
    return rows;
  } finally {
    await watch?.stop().catch(() => undefined);
    await probe?.stop().catch(() => undefined);
    await op?.stop();
    await cp.stop();
  }
}

export async function benchOperator(
  o: { sizes?: number[]; quietSeconds?: number; timeoutMs?: number } = {},
): Promise<{ rows: OperatorBenchRow[]; gateway: GatewayFleetResult }> {
  const sizes = o.sizes ?? process.env.GANTRY_BENCH_FLEET_SIZES?.split(",").map(Number) ?? [100, 500, 2000];
  const rows: OperatorBenchRow[] = [];
  const gateway: GatewayFleetResult = { apps: Math.max(...sizes) };
  for (const n of sizes) {
    const largest = n === Math.max(...sizes) && process.env.GANTRY_BENCH_FLEET_EXTRA_ROWS !== "0";
    try {
      rows.push(
        ...(await benchFleet(n, {
          quietSeconds: o.quietSeconds ?? Number(process.env.GANTRY_BENCH_QUIET_SECONDS ?? 60),
          restart: largest,
          timeoutMs: o.timeoutMs ?? 600_000,
          ...(largest ? { gateway } : {}),
        })),
      );
    } catch (err) {
      log(`${n} apps failed: ${String(err)}`);
      rows.push({ ...row(`${n} apps`, n, Number.NaN, "", "", 0), problems: [String(err).split("\n")[0]!] });
    }
  }
  return { rows, gateway };
}

export function printOperatorTable({ rows, gateway }: { rows: OperatorBenchRow[]; gateway: GatewayFleetResult }): void {
  printTable(
    `Operator at fleet scale: N ModelApps created at once on a fresh test control plane (kwok nodes, one pod per app), ${os.cpus().length} CPUs. Writes and requests: the operator's to the API server outside its watches, lease renewals left out. Targets (2 cores): 500 apps ≤ 5× the 100-app time, 2,000 ≤ 120 s, 0 writes in the quiet window, on restart and by a new leader, RSS ≤ 300 MB at 2,000`,
    [
      "run",
      "all reconciled s (restart, handover: caught up)",
      "reconcile p50 / p99 ms",
      "reconciles",
      "writes until settled",
      "requests until settled",
      "writes in quiet window",
      "RSS MB (JS heap used)",
      "load avg (1 min) at end",
      "problems",
    ],
    rows.map((r) => [
      r.label,
      r.seconds,
      `${r.p50Ms.toFixed(1)} / ${r.p99Ms.toFixed(0)}`,
      String(r.reconciles),
      String(r.writes),
      String(r.requests),
      `${r.quietWrites} in ${r.quietSeconds} s`,
      `${r.rssMb.toFixed(0)} (${r.heapMb.toFixed(0)})`,
      r.load,
      r.problems.join("; ") || "none",
    ]),
  );
  for (const r of rows)
    if (r.cpu) console.log(`CPU seconds from the first create until all reconciled, ${r.label}: ${r.cpu}`);
  const g = [gateway.one, gateway.fleet].filter((x): x is ProbeLatency => x !== undefined);
  printTable(
    `Gateway beside the fleet: GET /api/version of a probe app (a stand-in pod on this host) through a kube-mode gateway watching every namespace, one request at a time, medians of 3 interleaved rounds of 2,000; fleet apps it knew (401 without a key, not 404): ${gateway.known ?? "-"} of ${gateway.apps}${gateway.problem ? `; failed: ${gateway.problem}` : ""}`,
    ["apps in the gateway's table", "through the gateway p50 ms", "p99 ms", "direct p50 ms", "added p50 ms"],
    g.map((r) => [r.apps, r.gatewayP50Ms, r.gatewayP99Ms, r.directP50Ms, r.addedP50Ms]),
  );
  if (rows.some((r) => r.problems.length) || gateway.problem) process.exitCode = 1;
}

if (import.meta.main) {
  const sizes = process.argv[2]?.split(",").map(Number);
  const quietSeconds = process.argv[3] ? Number(process.argv[3]) : undefined;
  printOperatorTable(await benchOperator({ ...(sizes ? { sizes } : {}), ...(quietSeconds ? { quietSeconds } : {}) }));
}
