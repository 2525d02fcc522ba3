// One network namespace per pod, joined to the host by a veth pair. Pod IPs come from 10.244.128.0/17, a range that
// exists only on this machine: the host routes each pod IP (/32) to its veth and marks the rest of 10.244.0.0/16 and
// the service range 10.96.0.0/16 unreachable, so nothing addressed to a pod or a Service can ever leave the machine.
// Inside a pod the routes go to the host end (POD_GATEWAY), for the host itself, the pod range and the Service range:
// the host forwards between pods' veths (the process runtime sets ip_forward) and answers Service ClusterIPs itself
// (service-network.ts), so a pod reaches the host's services on 0.0.0.0, other pods and Services, and nothing else.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";

export const POD_GATEWAY = "10.244.128.1";
const POOL_FIRST = (128 << 8) + 2,
  POOL_LAST = (255 << 8) + 254;
const POD_RANGE = "10.244.128.0/17",
  SERVICE_RANGE = "10.96.0.0/16";
const GUARDED_RANGES = ["10.244.0.0/16", SERVICE_RANGE];

export interface PodNetwork {
  netns: string;
  podIp: string;
  hostIf: string;
}

const ip = (args: string[]): string =>
  execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const ipQuiet = (args: string[]): void => {
  try {
    ip(args);
  } catch {
    /* already gone */
  }
};

/** A short id per cluster dir, so two clusters' namespaces and interfaces never collide. */
export const clusterNetId = (dir: string): string => createHash("sha1").update(dir).digest("hex").slice(0, 5);

function ensureGuardRoutes(): void {
  const existing = ip(["-4", "route", "show", "type", "unreachable"]);
  for (const r of GUARDED_RANGES) if (!existing.includes(r)) ipQuiet(["route", "add", "unreachable", r]);
}

const reserved = new Set<string>();
function allocateIp(): string {
  const routes = ip(["-4", "route", "show"]);
  const used = new Set([...routes.matchAll(/^(10\.244\.\d+\.\d+) dev /gm)].map((m) => m[1]));
  for (let n = POOL_FIRST; n <= POOL_LAST; n++) {
    const addr = `10.244.${n >> 8}.${n & 255}`;
    if (!used.has(addr) && !reserved.has(addr)) {
      reserved.add(addr);
      return addr;
    }
  }
  throw new Error("pod IP pool 10.244.128.0/17 exhausted");
}

export function createPodNetwork(netId: string, index: number): PodNetwork {
  ensureGuardRoutes();
  const netns = `gantry-${netId}-${index}`,
    suffix = `${netId}${index.toString(36)}`;
  const hostIf = `gh${suffix}`,
    peer = `gp${suffix}`;
  const podIp = allocateIp();
  const inNs = (args: string[]): string => ip(["netns", "exec", netns, "ip", ...args]);
  try {
    ip(["netns", "add", netns]);
    ip(["link", "add", hostIf, "type", "veth", "peer", "name", peer]);
    ip(["link", "set", peer, "netns", netns]);
    ip(["addr", "add", `${POD_GATEWAY}/32`, "dev", hostIf]);
    ip(["link", "set", hostIf, "up"]);
    ip(["route", "add", `${podIp}/32`, "dev", hostIf]);
    inNs(["link", "set", "lo", "up"]);
    inNs(["link", "set", peer, "name", "eth0"]);
    inNs(["addr", "add", `${podIp}/32`, "dev", "eth0"]);
    inNs(["link", "set", "eth0", "up"]);
    inNs(["route", "add", `${POD_GATEWAY}/32`, "dev", "eth0"]);
    // Other pods and Services: through the host (which forwards between veths and proxies ClusterIPs).
    for (const range of [POD_RANGE, SERVICE_RANGE]) inNs(["route", "add", range, "via", POD_GATEWAY, "dev", "eth0"]);
  } catch (err) {
    deletePodNetwork({ netns, podIp, hostIf });
    throw err;
  }
  return { netns, podIp, hostIf };
}

/** Kills whatever still runs inside the namespace, then removes it and the host end of the veth. */
export function deletePodNetwork(net: PodNetwork): void {
  let pids: string[] = [];
  try {
    pids = ip(["netns", "pids", net.netns]).split("\n").filter(Boolean);
  } catch {
    /* no such netns */
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      /* gone */
    }
  }
  ipQuiet(["netns", "del", net.netns]);
  ipQuiet(["link", "del", net.hostIf]);
  ipQuiet(["route", "del", `${net.podIp}/32`]);
  reserved.delete(net.podIp);
}

/** Removes every pod network of one cluster (after a crash of its runtime, or when the cluster stops). */
export function deleteClusterPodNetworks(netId: string): number {
  let listing: string;
  try {
    listing = ip(["netns", "list"]);
  } catch {
    return 0;
  }
  const names = listing
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((n) => n.startsWith(`gantry-${netId}-`));
  for (const netns of names) {
    const index = Number(netns.split("-").pop());
    deletePodNetwork({ netns, podIp: "", hostIf: `gh${netId}${index.toString(36)}` });
  }
  return names.length;
}
