// Runs `gantry operator` as a real process against the test control plane, the way a user runs it next to a cluster:
// its own config file, the cluster's kubeconfig, a free port for /healthz, /readyz, /metrics and /v1/load.
import { execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse, stringify } from "yaml";
import { GPU_TOLERATION } from "../../operator/config.ts";
import type { ControlPlane } from "../cluster/control-plane.ts";
import { PROCESS_RUNTIME_LABEL } from "../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../cluster/runtime/pod-network.ts";
import { freePort, REPO, spawnGantry } from "./server.ts";

export interface TestOperator {
  url: string;
  proc: ChildProcess;
  logs(): string;
  /** Prometheus text of /metrics. */
  metrics(): Promise<string>;
  /** Sum of a counter or gauge's samples whose labels match. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** API writes so far (every request but reads), leaving out leader-lease renewals. */
  writes(): Promise<number>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export const CRD_FILE = path.join(REPO, "crds", "modelapps.gantry.dev.yaml");

/** The Node flags the chart gives the operator (operator.nodeOptions): tests and benches run what ships. */
export const CHART_OPERATOR_NODE_OPTIONS: string = (
  parse(fs.readFileSync(path.join(REPO, "charts", "gantry", "values.yaml"), "utf8")) as {
    operator: { nodeOptions: string };
  }
).operator.nodeOptions;

export function kubectl(
  cp: Pick<ControlPlane, "binDir" | "kubeconfig">,
  args: readonly string[],
  input?: string,
): string {
  return execFileSync(path.join(cp.binDir, "kubectl"), ["--kubeconfig", cp.kubeconfig, ...args], {
    encoding: "utf8",
    stdio: ["pipe", "pipe", "pipe"],
    ...(input !== undefined ? { input } : {}),
  });
}

/** kubectl that returns its failure (status and stderr) instead of throwing. */
export function kubectlResult(
  cp: Pick<ControlPlane, "binDir" | "kubeconfig">,
  args: readonly string[],
  input?: string,
): { ok: boolean; out: string } {
  try {
    return { ok: true, out: kubectl(cp, args, input) };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, out: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}

/** Installs (or updates) the ModelApp CRD from crds/ and waits until it is served. */
export function installCrd(cp: Pick<ControlPlane, "binDir" | "kubeconfig">): void {
  kubectl(cp, ["apply", "--server-side", "--force-conflicts", "-f", CRD_FILE]);
  kubectl(cp, ["wait", "--for=condition=Established", "--timeout=60s", "crd/modelapps.gantry.dev"]);
}

/** Sum of the samples of a metric whose labels satisfy `keep` (Prometheus text format). */
export function sumMetricWhere(text: string, name: string, keep: (labels: Record<string, string>) => boolean): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries(
      [...(m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]),
    );
    if (keep(labels)) sum += Number(m[4]);
  }
  return sum;
}

export const sumMetric = (text: string, name: string, labels: Record<string, string> = {}): number =>
  sumMetricWhere(text, name, (have) => Object.entries(labels).every(([k, v]) => have[k] === v));

/** Writes the operator sent (all but reads), leaving out leader-lease renewals. */
export const operatorWrites = (text: string): number =>
  sumMetricWhere(text, "gantry_operator_kube_requests_total", (l) => l.verb !== "get" && l.resource !== "leases");

export async function startTestOperator(
  cp: Pick<ControlPlane, "kubeconfig">,
  config: Record<string, unknown>,
  opts: { env?: Record<string, string>; waitReady?: boolean } = {},
): Promise<TestOperator> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-operator-"));
  const configFile = path.join(dir, "config.yaml");
  fs.writeFileSync(configFile, stringify({ ...config, listen: `127.0.0.1:${port}` }));
  const url = `http://127.0.0.1:${port}`;
  const p = await spawnGantry(
    ["operator", "--config", configFile, "--kubeconfig", cp.kubeconfig],
    {
      GANTRY_LOG_LEVEL: "debug",
      ...opts.env,
      // The caller's flags (a CPU profile, say) come after the chart's, so they add to them or override them.
      NODE_OPTIONS: [process.env.NODE_OPTIONS, CHART_OPERATOR_NODE_OPTIONS, opts.env?.NODE_OPTIONS]
        .filter(Boolean)
        .join(" "),
    },
    `${url}/readyz`,
    (status) => status === 200 || (opts.waitReady === false && status === 503),
  );
  const metrics = async () => (await fetch(`${url}/metrics`)).text();
  return {
    url,
    proc: p.proc,
    logs: p.logs,
    metrics,
    stop: p.stop,
    metric: async (name, labels) => sumMetric(await metrics(), name, labels),
    writes: async () => operatorWrites(await metrics()),
  };
}

/**
 * A token of the ServiceAccount the operator accepts load reports from by default (gantry-system/gantry-gateway),
 * created when missing: what a gateway in the cluster sends as its bearer token.
 */
export function loadReportToken(cp: Pick<ControlPlane, "binDir" | "kubeconfig">, account = "gantry-gateway"): string {
  kubectlResult(cp, ["create", "namespace", "gantry-system"]);
  kubectlResult(cp, ["create", "serviceaccount", account, "-n", "gantry-system"]);
  return kubectl(cp, ["create", "token", account, "-n", "gantry-system", "--duration=2h"]).trim();
}

/** POST /v1/load as a gateway does. */
export async function postLoad(
  url: string,
  token: string | undefined,
  body: string | Record<string, unknown>,
): Promise<Response> {
  return fetch(`${url}/v1/load`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/**
 * An operator config for apps whose pods really run (the process runtime's label) and pull from a test hub on this host
 * (which pods reach through their gateway address), in one namespace, with a quick leader election of its own; the
 * nvidia-gpu profile schedules on the fake GPU nodes as in production, without asking for CUDA (there is no GPU here).
 */
export function podsOperatorConfig(o: {
  namespace: string;
  hubPort: number;
  lease: string;
  extra?: Record<string, unknown>;
}): Record<string, unknown> {
  return {
    watchNamespace: o.namespace,
    hubUrl: `http://${POD_GATEWAY}:${o.hubPort}`,
    podLabels: { [PROCESS_RUNTIME_LABEL]: "true" },
    resourceProfiles: { "nvidia-gpu": { gpuResource: "nvidia.com/gpu", tolerations: [GPU_TOLERATION] } },
    leaderElection: { name: o.lease, leaseDurationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 1 },
    ...o.extra,
  };
}
