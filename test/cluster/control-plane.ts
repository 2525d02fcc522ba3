// A real Kubernetes control plane for tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake
// GPU/CPU nodes) and the process runtime (runs opted-in pods as local processes), all on 127.0.0.1 with random ports.
// Shell commands: test/cluster/cli.ts (what `npm run cluster:up|down` call).
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { ensureBinaries } from "./binaries.ts";
import { createDefaultStorageClass, createFakeNodes, FAKE_NODES } from "./fake-nodes.ts";
import { kwokConfigExcludingProcessRuntime } from "./kwok-config.ts";
import { stopRealNode } from "./real-node.ts";
import { generatePki, kubeconfigYaml } from "./pki.ts";
import { freePort, isOurs, readRecorded, startRecorded, stopRecorded, waitFor } from "./processes.ts";
import { clusterNetId, deleteClusterPodNetworks } from "./runtime/pod-network.ts";
import { kubernetesServiceIp, pickServiceCidr, releaseServiceCidr } from "./runtime/service-network.ts";

export interface ControlPlane {
  kubeconfig: string;
  dir: string;
  apiUrl: string;
  caFile: string;
  /** The dir with kubectl, helm and the other binaries. */
  binDir: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Run dir (pki, etcd data, logs, pod volumes); default a new dir under $GANTRY_CACHE/cluster. */
  dir?: string;
  /** kwok, fake nodes and the process runtime; default true. */
  withKwok?: boolean;
  /** Binaries dir; default: build-bins.sh (cached). */
  binDir?: string;
}

/** What <dir>/cluster.json records, enough for another process to reuse or stop the cluster. */
export interface ClusterRecord {
  dir: string;
  kubeconfig: string;
  apiUrl: string;
  caFile: string;
  binDir: string;
  repo: string;
  startedAt: string;
  /** The cluster's Service range (its ClusterIPs live on the host's loopback while it runs). */
  serviceCidr?: string;
}

export const gantryCache = (): string => process.env.GANTRY_CACHE ?? path.join(os.homedir(), ".cache", "gantry");
const repoRoot = path.resolve(import.meta.dirname, "../..");
const log = (msg: string): void => {
  process.stderr.write(`test-cluster: ${msg}\n`);
};

/**
 * The apiserver must advertise a non-loopback address (loopback breaks the `kubernetes` Endpoints); none → loopback.
 */
function advertiseAddress(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? [])
      if (a.family === "IPv4" && !a.internal && !a.address.startsWith("10.244.")) return a.address;
  }
  return undefined;
}

function httpsOk(url: string, ca?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(url, ca ? { ca } : { rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.setTimeout(3000, () => req.destroy());
  });
}

export async function apiserverReady(record: Pick<ClusterRecord, "apiUrl" | "caFile">): Promise<boolean> {
  if (!fs.existsSync(record.caFile)) return false;
  return httpsOk(`${record.apiUrl}/readyz`, fs.readFileSync(record.caFile, "utf8"));
}

export function readClusterRecord(dir: string): ClusterRecord | undefined {
  const file = path.join(dir, "cluster.json");
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as ClusterRecord) : undefined;
}

/**
 * Healthy = started from this checkout (its process runtime runs this checkout's `gantry`), the apiserver answers
 * /readyz and every recorded process is still alive.
 */
export async function clusterHealthy(dir: string): Promise<boolean> {
  const rec = readClusterRecord(dir);
  if (!rec || rec.repo !== repoRoot) return false;
  const procs = readRecorded(dir);
  return procs.length > 0 && procs.every((p) => isOurs(p.pid, dir)) && (await apiserverReady(rec));
}

export async function stopControlPlane(dir: string, opts: { keepDir?: boolean } = {}): Promise<void> {
  const rec = readClusterRecord(dir);
  let killed: string[] = [];
  await stopRealNode(dir, async () => {
    killed = await stopRecorded(dir);
  });
  if (rec?.serviceCidr) releaseServiceCidr(rec.serviceCidr);
  if (killed.length) log(`had to SIGKILL ${killed.join(", ")}`);
  const leftovers = deleteClusterPodNetworks(clusterNetId(dir));
  if (leftovers) log(`removed ${leftovers} leftover pod network(s)`);
  if (!opts.keepDir) fs.rmSync(dir, { recursive: true, force: true });
}

function handle(rec: ClusterRecord): ControlPlane {
  return { ...rec, stop: () => stopControlPlane(rec.dir) };
}

export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const started = Date.now();
  const binDir = opts.binDir ?? ensureBinaries();
  const bin = (name: string): string => path.join(binDir, name);
  const dir = opts.dir ?? fs.mkdtempSync(path.join(gantryCache(), "cluster", "run-"));
  fs.mkdirSync(dir, { recursive: true });
  const serviceCidr = pickServiceCidr(clusterNetId(dir));
  try {
    const advertise = advertiseAddress();
    const pki = generatePki(path.join(dir, "pki"), advertise ?? "127.0.0.1", kubernetesServiceIp(serviceCidr));
    const [etcdPort, etcdPeerPort, apiPort, kcmPort, schedPort, kubeletPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const apiUrl = `https://127.0.0.1:${apiPort}`;
    const kubeconfig = path.join(dir, "admin.kubeconfig");
    fs.writeFileSync(kubeconfig, kubeconfigYaml(pki, apiUrl), { mode: 0o600 });
    const rec: ClusterRecord = {
      dir,
      kubeconfig,
      apiUrl,
      caFile: pki.caCrt,
      binDir,
      repo: repoRoot,
      startedAt: new Date().toISOString(),
      serviceCidr,
    };

    const etcdUrl = `http://127.0.0.1:${etcdPort}`,
      etcdPeer = `http://127.0.0.1:${etcdPeerPort}`;
    startRecorded(dir, "etcd", bin("etcd"), [
      "--name=gantry-test",
      `--data-dir=${path.join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${etcdPeer}`,
      `--initial-advertise-peer-urls=${etcdPeer}`,
      `--initial-cluster=gantry-test=${etcdPeer}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
    ]);
    await waitFor("etcd", async () => (await fetch(`${etcdUrl}/health`)).ok, 30_000, dir);

    startRecorded(dir, "kube-apiserver", bin("kube-apiserver"), [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      `--advertise-address=${advertise ?? "127.0.0.1"}`,
      ...(advertise ? [] : ["--endpoint-reconciler-type=none"]),
      `--tls-cert-file=${pki.apiserverCrt}`,
      `--tls-private-key-file=${pki.apiserverKey}`,
      `--client-ca-file=${pki.caCrt}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      `--service-cluster-ip-range=${serviceCidr}`,
      "--authorization-mode=RBAC",
      "--allow-privileged=true",
      // `kubectl logs` dials the node's InternalIP (127.0.0.1) only, never a host name that would need DNS.
      "--kubelet-preferred-address-types=InternalIP",
      `--kubelet-client-certificate=${pki.adminCrt}`,
      `--kubelet-client-key=${pki.adminKey}`,
    ]);
    await waitFor("kube-apiserver /readyz", () => apiserverReady(rec), 120_000, dir);

    const kubeArgs = [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      "--bind-address=127.0.0.1",
      "--leader-elect=false",
      // The defaults (20 requests/s, kcm; 50, scheduler) made Deployments of a 2,000-app fleet wait minutes for pods.
      "--kube-api-qps=500",
      "--kube-api-burst=1000",
    ];
    startRecorded(dir, "kube-controller-manager", bin("kube-controller-manager"), [
      ...kubeArgs,
      `--secure-port=${kcmPort}`,
      "--use-service-account-credentials=false",
      `--service-account-private-key-file=${pki.saKey}`,
      `--root-ca-file=${pki.caCrt}`,
      `--cluster-signing-cert-file=${pki.caCrt}`,
      `--cluster-signing-key-file=${pki.caKey}`,
    ]);
    startRecorded(dir, "kube-scheduler", bin("kube-scheduler"), [
      ...kubeArgs,
      `--secure-port=${schedPort}`,
      // A pod found unschedulable on a claim the scheduler had not yet seen may miss the claim's events across an API
      // server restart (fleet-faults.test.ts kills it mid-reconcile); the scheduler retries it only after this, 5 min
      // by default, longer than a test waits.
      "--pod-max-in-unschedulable-pods-duration=20s",
    ]);
    await waitFor(
      "kube-controller-manager /healthz",
      () => httpsOk(`https://127.0.0.1:${kcmPort}/healthz`),
      60_000,
      dir,
    );
    await waitFor("kube-scheduler /healthz", () => httpsOk(`https://127.0.0.1:${schedPort}/healthz`), 60_000, dir);

    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(
      "the default ServiceAccount",
      async () => Boolean(await core.readNamespacedServiceAccount({ name: "default", namespace: "default" })),
      60_000,
      dir,
    );

    if (opts.withKwok ?? true) {
      const nodeIp = "127.0.0.1";
      await createFakeNodes(kc, nodeIp, kubeletPort);
      await createDefaultStorageClass(kc);
      const kwokConfig = path.join(dir, "kwok.yaml");
      fs.writeFileSync(kwokConfig, kwokConfigExcludingProcessRuntime(fs.readFileSync(bin("kwok.yaml"), "utf8")));
      startRecorded(dir, "kwok", bin("kwok"), [
        `--kubeconfig=${kubeconfig}`,
        `--config=${kwokConfig}`,
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-lease-duration-seconds=40",
        "--cidr=10.244.0.0/17",
        `--node-ip=${nodeIp}`,
      ]);
      startRecorded(dir, "process-runtime", process.execPath, [
        path.join(import.meta.dirname, "process-runtime.ts"),
        `--dir=${dir}`,
        `--kubeconfig=${kubeconfig}`,
        `--repo=${repoRoot}`,
        `--kubelet-port=${kubeletPort}`,
        `--apiserver=127.0.0.1:${apiPort}`,
        `--tls-cert=${pki.kubeletCrt}`,
        `--tls-key=${pki.kubeletKey}`,
      ]);
      await waitFor(
        "fake nodes Ready",
        async () => {
          const nodes = (await core.listNode()).items;
          const ready = nodes.filter((n) =>
            n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          );
          return ready.length === FAKE_NODES.length;
        },
        60_000,
        dir,
      );
      await waitFor("process runtime", async () => fs.existsSync(path.join(dir, "runtime.ready")), 60_000, dir);
    }
    fs.writeFileSync(path.join(dir, "cluster.json"), JSON.stringify(rec, null, 2));
    log(`control plane up in ${((Date.now() - started) / 1000).toFixed(1)}s: ${apiUrl}, dir ${dir}`);
    return handle(rec);
  } catch (err) {
    await stopControlPlane(dir, { keepDir: true });
    releaseServiceCidr(serviceCidr);
    throw err;
  }
}
