// One real node beside the kwok nodes: a kubelet built from the same Kubernetes source and version as the API server
// (build-bins.sh --kubelet), containerd and runc from Debian's packages with the cgroupfs driver, and a CNI bridge for
// its pods (10.244.64.0/24; the host is 10.244.64.1 on it, and the process runtime's POD_GATEWAY address is the host's
// too). Cluster DNS: CoreDNS (built by build-bins.sh) with its kubernetes plugin, on the bridge's host address, which
// the kubelet gives pods as their nameserver. Service IPs: the process runtime's Service proxy, which holds every
// ClusterIP on the host (runtime/service-network.ts), so a pod's connection to one reaches it through the bridge's
// gateway, `kubernetes` included. Its processes are recorded with the control plane's (stopped with it). It is
// tainted and labelled gantry.dev/real-node=true so that only pods that ask for it land there; images are imported,
// never pulled (no registry): importImage takes an OCI archive (`podman save --format oci-archive`).
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { ensureBinaries } from "./binaries.ts";
import { freePort, startRecorded, waitFor } from "./processes.ts";

const run = promisify(execFile);

export const REAL_NODE = "real-node-0";
export const REAL_NODE_LABEL = "gantry.dev/real-node";
export const REAL_NODE_SUBNET = "10.244.64.0/24";
export const REAL_NODE_GATEWAY = "10.244.64.1";
const BRIDGE = "gantry-rn0";
export const CLUSTER_DOMAIN = "cluster.local";
/** The sandbox image containerd runs for every pod (built here from Kubernetes' pause.c). */
const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";

export interface RealNode {
  name: string;
  dir: string;
  /** containerd's socket, for `ctr --address`. */
  socket: string;
  /** Imports an OCI archive into the node's containerd (namespace k8s.io) and tags it as `name`. */
  importImage(archive: string, name: string): Promise<void>;
  /** ctr with the node's socket and the k8s.io namespace. */
  ctr(args: string[]): Promise<string>;
}

const containerdConfig = (dir: string, socket: string): string => `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${dir}/cni"
`;

const cniConfig = (dir: string): string =>
  JSON.stringify({
    cniVersion: "0.4.0",
    name: "gantry-real-node",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: REAL_NODE_SUBNET, gateway: REAL_NODE_GATEWAY }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: `${dir}/cni-ipam`,
        },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  });

// cgroupfs: no systemd here. failCgroupV1 false: this VM mounts cgroup v1 hierarchies (cgroup2 only at
// /sys/fs/cgroup/unified), which a kubelet refuses when it is true. No swap check, no eviction at this disk's fill.
const kubeletConfig = (o: { dir: string; socket: string; port: number; healthz: number; caFile: string }): string =>
  JSON.stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: REAL_NODE_GATEWAY,
    port: o.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: o.healthz,
    containerRuntimeEndpoint: `unix://${o.socket}`,
    cgroupDriver: "cgroupfs",
    failCgroupV1: false,
    failSwapOn: false,
    // Only clients with a certificate of the cluster's CA (the apiserver's): pods on the bridge reach this address.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: o.caFile } },
    authorization: { mode: "AlwaysAllow" },
    evictionHard: { "memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%" },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    localStorageCapacityIsolation: false,
    registerWithTaints: [{ key: REAL_NODE_LABEL, value: "true", effect: "NoSchedule" }],
    resolvConf: "/etc/resolv.conf",
    clusterDNS: [REAL_NODE_GATEWAY],
    clusterDomain: CLUSTER_DOMAIN,
    serializeImagePulls: false,
    staticPodPath: "",
  });

// CoreDNS as a cluster's DNS runs it (kubeadm's Corefile), on the bridge's host address; names outside the cluster
// go to the host's resolvers.
const corefile = (o: { kubeconfig: string; readyPort: number }): string => `.:53 {
    bind ${REAL_NODE_GATEWAY}
    errors
    ready 127.0.0.1:${o.readyPort}
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${o.kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
    loadbalance
}
`;

/** The pods' bridge, made before any pod so that CoreDNS can listen on its host address (the CNI plugin reuses it). */
function createBridge(): void {
  const ip = (...args: string[]) => spawnSync("ip", args, { encoding: "utf8" });
  if (ip("link", "show", BRIDGE).status !== 0) ip("link", "add", BRIDGE, "type", "bridge");
  const addr = ip("addr", "add", `${REAL_NODE_GATEWAY}/24`, "dev", BRIDGE);
  if (addr.status !== 0 && !/exists|already assigned/.test(addr.stderr)) throw new Error(`${BRIDGE}: ${addr.stderr}`);
  ip("link", "set", BRIDGE, "up");
}

/** Whether something accepts TCP connections on host:port (a refused or unreachable address: no). */
const listening = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.once("timeout", () => done(false));
  });

/** The pause image as an OCI archive: Kubernetes' pause binary alone, built with the container engine given. */
async function pauseArchive(
  bin: string,
  dir: string,
  engine: { cmd: string; env: NodeJS.ProcessEnv },
): Promise<string> {
  const ctx = path.join(dir, "pause-image");
  fs.mkdirSync(ctx, { recursive: true });
  fs.copyFileSync(path.join(bin, "pause"), path.join(ctx, "pause"));
  fs.writeFileSync(path.join(ctx, "Containerfile"), 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n');
  const archive = path.join(dir, "pause.oci.tar");
  await run(engine.cmd, ["build", "-q", "-t", PAUSE_IMAGE, ctx], { env: engine.env });
  fs.rmSync(archive, { force: true });
  await run(engine.cmd, ["save", "--format", "oci-archive", "-o", archive, PAUSE_IMAGE], { env: engine.env });
  return archive;
}

/**
 * Starts the real node on `cp` (containerd, then the kubelet) and waits for it to be Ready. `engine`: the container
 * engine that builds the pause image (podman or docker, test/support/container-image.ts).
 */
export async function startRealNode(
  cp: { dir: string; kubeconfig: string; caFile: string },
  engine: { cmd: string; env: NodeJS.ProcessEnv },
): Promise<RealNode> {
  const bin = ensureBinaries({ kubelet: true });
  const dir = path.join(cp.dir, "rn");
  const socket = path.join(dir, "containerd.sock");
  const ctr = async (args: string[]): Promise<string> =>
    (await run("ctr", ["--address", socket, "--namespace", "k8s.io", ...args], { maxBuffer: 16 << 20 })).stdout;
  const kubectl = (args: string[]) => run(path.join(bin, "kubectl"), [`--kubeconfig=${cp.kubeconfig}`, ...args]);
  const ready = async () =>
    (
      await kubectl(["get", "node", REAL_NODE, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])
    ).stdout.trim() === "True";
  const started = fs.existsSync(path.join(dir, "kubelet.json"));
  if (!started) {
    // One real node per host: the bridge, its address and CoreDNS's port are the host's.
    if (await listening(REAL_NODE_GATEWAY, 53))
      throw new Error(
        `another test cluster's real node runs on this host (CoreDNS answers on ${REAL_NODE_GATEWAY}:53): stop that ` +
          "cluster first (npm run cluster:down in its checkout, with its GANTRY_TEST_CLUSTER_DIR)",
      );
    fs.mkdirSync(path.join(dir, "cni"), { recursive: true });
    fs.writeFileSync(path.join(dir, "containerd.toml"), containerdConfig(dir, socket));
    fs.writeFileSync(path.join(dir, "cni", "10-gantry.conflist"), cniConfig(dir));
    startRecorded(cp.dir, "containerd", "containerd", ["--config", path.join(dir, "containerd.toml")]);
    createBridge();
    const readyPort = await freePort();
    fs.writeFileSync(path.join(dir, "Corefile"), corefile({ kubeconfig: cp.kubeconfig, readyPort }));
    fs.writeFileSync(path.join(dir, "coredns-ready-port"), String(readyPort));
    startRecorded(cp.dir, "coredns", path.join(bin, "coredns"), ["-conf", path.join(dir, "Corefile")]);
  }
  await waitFor("containerd", async () => fs.existsSync(socket) && (await ctr(["version"])).length > 0, 30_000, cp.dir);
  const readyPort = fs.readFileSync(path.join(dir, "coredns-ready-port"), "utf8");
  await waitFor("CoreDNS /ready", async () => (await fetch(`http://127.0.0.1:${readyPort}/ready`)).ok, 60_000, cp.dir);

  const node: RealNode = {
    name: REAL_NODE,
    dir,
    socket,
    ctr,
    async importImage(archive, name) {
      const out = await ctr(["images", "import", "--all-platforms", archive]);
      const imported = /^unpacking (\S+) /m.exec(out)?.[1];
      if (!imported) throw new Error(`ctr imported nothing from ${archive}: ${out}`);
      const full = name.includes("/") ? name : `docker.io/library/${name}`;
      if (imported !== full) {
        await ctr(["images", "rm", full]).catch(() => "");
        await ctr(["images", "tag", imported, full]);
      }
    },
  };
  if (started) {
    // This control plane's node, started by an earlier test file of the run.
    await waitFor(`the kubelet's node ${REAL_NODE} Ready`, ready, 180_000, cp.dir);
    return node;
  }
  await node.importImage(await pauseArchive(bin, dir, engine), PAUSE_IMAGE);

  const [port, healthz] = [await freePort(), await freePort()];
  fs.writeFileSync(path.join(dir, "kubelet.json"), kubeletConfig({ dir, socket, port, healthz, caFile: cp.caFile }));
  startRecorded(cp.dir, "kubelet", path.join(bin, "kubelet"), [
    `--config=${path.join(dir, "kubelet.json")}`,
    `--kubeconfig=${cp.kubeconfig}`,
    `--root-dir=${path.join(dir, "kubelet")}`,
    `--hostname-override=${REAL_NODE}`,
    // The address the apiserver dials for logs and exec, where the kubelet listens: the bridge's host address (a
    // kubelet refuses a loopback node IP; the host's own address would open it to the host's network).
    `--node-ip=${REAL_NODE_GATEWAY}`,
    `--node-labels=${REAL_NODE_LABEL}=true`,
    "--v=1",
  ]);
  await waitFor(`the kubelet's node ${REAL_NODE} Ready`, ready, 180_000, cp.dir);
  return node;
}

/**
 * What stopping the kubelet and containerd leaves behind, removed (stopControlPlane calls it first): the pods'
 * containers (their shims outlive containerd), then, once the processes are gone (`after`), the mounts under the
 * node's directory and its bridge.
 */
export async function stopRealNode(clusterDir: string, stopProcesses: () => Promise<void>): Promise<void> {
  const dir = path.join(clusterDir, "rn");
  if (!fs.existsSync(dir)) return stopProcesses();
  const ctr = (...args: string[]) =>
    spawnSync("ctr", ["--address", path.join(dir, "containerd.sock"), "--namespace", "k8s.io", ...args], {
      encoding: "utf8",
      timeout: 20_000,
    });
  const tasks = (ctr("tasks", "ls", "-q").stdout ?? "").split("\n").filter(Boolean);
  for (const id of tasks) ctr("tasks", "kill", "-s", "SIGKILL", id);
  for (const id of tasks) ctr("tasks", "rm", "-f", id);
  await stopProcesses();
  const mounts = fs
    .readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "")
    .filter((m) => m.startsWith(`${dir}/`))
    .sort()
    .reverse();
  for (const m of mounts) spawnSync("umount", ["-l", m]);
  spawnSync("ip", ["link", "del", BRIDGE]);
}
