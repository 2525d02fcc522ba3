// What kube-proxy and cluster DNS give pods, for the process runtime's pods: Service ClusterIPs that work and Service
// names that resolve. Each cluster gets its own Service range (a /20 of 10.96.0.0/16, so clusters of several checkouts
// on one machine never share an address). A ClusterIP is added to the host's loopback device and a TCP proxy listens on
// each of the Service's ports, forwarding every connection to one of the Service's ready endpoints (a userspace
// kube-proxy); `default/kubernetes` forwards to the apiserver, so pods reach it at KUBERNETES_SERVICE_HOST:443 like in
// a cluster. Names are served from each pod's /etc/hosts (a file the runtime rewrites in place on every change,
// bind-mounted by container-exec.sh): <svc>.<ns>.svc.cluster.local, <svc>.<ns>.svc, <svc>.<ns> and, in the same
// namespace, <svc>; headless Services name their ready endpoints' addresses (one line each). The host reaches
// ClusterIPs too.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";

export const SERVICE_SUBNETS = "10.96.0.0/16";

const ipQuiet = (args: string[]): void => {
  try {
    execFileSync("ip", args, { stdio: "ignore" });
  } catch {
    /* already there / already gone */
  }
};

/** Each cluster's Service range: a /20 of 10.96.0.0/16 (4,094 ClusterIPs: a 2,000-app fleet plus the tests' own), so
 * 16 clusters fit on one host. */
const BLOCK_BITS = 20,
  BLOCKS = 2 ** (BLOCK_BITS - 16),
  BLOCK_OCTETS = 256 / BLOCKS;

/** A Service range's block number (0-15) from its third octet. Pure. */
const blockOf = (thirdOctet: number): number => Math.floor(thirdOctet / BLOCK_OCTETS);

/** The third octets a block spans. Pure. */
const blockOctets = (cidr: string): [number, number] => {
  const first = Number(/^10\.96\.(\d+)\.0\/\d+$/.exec(cidr)?.[1] ?? Number.NaN);
  return [first, first + BLOCK_OCTETS - 1];
};

/**
 * The block of 10.96.0.0/16 a cluster's Services use: the first from a per-cluster start (so concurrent clusters rarely
 * try the same one) that no loopback address lies in (a running cluster holds at least its kubernetes Service's).
 * Pure but for `taken`, the loopback's 10.96 third octets (read from `ip addr` when not given).
 */
export function pickServiceCidr(netId: string, taken: number[] = loopbackServiceOctets()): string {
  const busy = new Set(taken.map(blockOf));
  const start = parseInt(netId, 16) % BLOCKS;
  for (let i = 0; i < BLOCKS; i++) {
    const k = (start + i) % BLOCKS;
    if (!busy.has(k)) return `10.96.${k * BLOCK_OCTETS}.0/${BLOCK_BITS}`;
  }
  throw new Error(`no free Service range in ${SERVICE_SUBNETS}: ${BLOCKS} test clusters hold them all`);
}

const loopbackServiceAddrs = (): string[] =>
  [
    ...execFileSync("ip", ["-4", "addr", "show", "dev", "lo"], { encoding: "utf8" }).matchAll(
      /inet (10\.96\.\d+\.\d+)\/32/g,
    ),
  ].map((m) => m[1]!);

const loopbackServiceOctets = (): number[] => loopbackServiceAddrs().map((a) => Number(a.split(".")[2]));

/** The kubernetes Service's address: the first of the range (what the apiserver certificate must name). Pure. */
export const kubernetesServiceIp = (cidr: string): string => `10.96.${blockOctets(cidr)[0]}.1`;

/** Whether an address lies in a Service range. Pure. */
export function inServiceCidr(cidr: string, ip: string): boolean {
  const [lo, hi] = blockOctets(cidr);
  const m = /^10\.96\.(\d+)\.\d+$/.exec(ip);
  return m !== null && Number(m[1]) >= lo && Number(m[1]) <= hi;
}

/** Removes the loopback addresses of a cluster's Service range (when it stops). */
export function releaseServiceCidr(cidr: string): void {
  for (const ip of loopbackServiceAddrs())
    if (inServiceCidr(cidr, ip)) ipQuiet(["addr", "del", `${ip}/32`, "dev", "lo"]);
}

interface Backend {
  host: string;
  port: number;
}

/** Ready endpoints of a Service port (by the port's name, as kube-proxy matches them). Pure. */
export function readyBackends(slices: V1EndpointSlice[], portName: string | undefined): Backend[] {
  const out: Backend[] = [];
  for (const s of slices) {
    const port = s.ports?.find((p) => (p.name ?? "") === (portName ?? ""))?.port;
    if (port === undefined) continue;
    for (const e of s.endpoints ?? [])
      if (e.conditions?.ready !== false) for (const a of e.addresses) out.push({ host: a, port });
  }
  return out;
}

/** /etc/hosts of a pod in `namespace`: localhost, the pod itself, then every Service. Pure. */
export function hostsFile(
  pod: { namespace: string; ip: string; hostname: string },
  services: V1Service[],
  slicesOf: (svc: V1Service) => V1EndpointSlice[],
): string {
  const lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", `${pod.ip}\t${pod.hostname}`];
  for (const svc of services) {
    const name = svc.metadata?.name ?? "",
      ns = svc.metadata?.namespace ?? "";
    const names = [`${name}.${ns}.svc.cluster.local`, `${name}.${ns}.svc`, `${name}.${ns}`];
    if (ns === pod.namespace) names.push(name);
    const ips =
      svc.spec?.clusterIP && svc.spec.clusterIP !== "None"
        ? [svc.spec.clusterIP]
        : [
            ...new Set(
              slicesOf(svc).flatMap((s) =>
                (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
              ),
            ),
          ];
    for (const ip of ips) lines.push(`${ip}\t${names.join(" ")}`);
  }
  return `${lines.join("\n")}\n`;
}

export interface ServiceNetworkOptions {
  /** host:port of the apiserver, where `default/kubernetes` forwards. */
  apiserver: Backend;
  log(msg: string): void;
}

/** The live state: Services and their slices (fed by informers), the proxies, and the pods' hosts files. */
export class ServiceNetwork {
  private readonly services = new Map<string, V1Service>();
  private readonly slices = new Map<string, V1EndpointSlice>();
  private readonly proxies = new Map<string, { server: net.Server; svcKey: string }>();
  private readonly hostsFiles = new Map<string, { file: string; namespace: string; ip: string; hostname: string }>();
  private readonly o: ServiceNetworkOptions;
  private timer: NodeJS.Timeout | undefined;

  constructor(o: ServiceNetworkOptions) {
    this.o = o;
  }

  setService(svc: V1Service, deleted = false): void {
    const key = `${svc.metadata?.namespace}/${svc.metadata?.name}`;
    if (deleted) this.services.delete(key);
    else this.services.set(key, svc);
    this.changed();
  }

  setSlice(slice: V1EndpointSlice, deleted = false): void {
    const key = `${slice.metadata?.namespace}/${slice.metadata?.name}`;
    if (deleted) this.slices.delete(key);
    else this.slices.set(key, slice);
    this.changed();
  }

  /** Registers a pod's hosts file and writes it; returns its path (mounted at /etc/hosts). */
  addPod(key: string, file: string, pod: { namespace: string; ip: string; hostname: string }): string {
    this.hostsFiles.set(key, { file, ...pod });
    this.writeHosts(this.hostsFiles.get(key)!);
    return file;
  }

  /** KUBERNETES_SERVICE_HOST/PORT as a kubelet derives them from the default/kubernetes Service. */
  kubernetesEnv(): Record<string, string> {
    const svc = this.services.get("default/kubernetes");
    const ip = svc?.spec?.clusterIP,
      port = svc?.spec?.ports?.[0]?.port;
    return ip && port ? { KUBERNETES_SERVICE_HOST: ip, KUBERNETES_SERVICE_PORT: String(port) } : {};
  }

  removePod(key: string): void {
    this.hostsFiles.delete(key);
  }

  close(): void {
    for (const { server } of this.proxies.values()) server.close();
    this.proxies.clear();
  }

  private slicesOf = (svc: V1Service): V1EndpointSlice[] =>
    [...this.slices.values()].filter(
      (s) =>
        s.metadata?.namespace === svc.metadata?.namespace &&
        s.metadata?.labels?.["kubernetes.io/service-name"] === svc.metadata?.name,
    );

  /** Coalesces a burst of informer events into one sync. */
  private changed(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sync();
    }, 50);
  }

  private writeHosts(h: { file: string; namespace: string; ip: string; hostname: string }): void {
    // In place (same inode): the file is bind-mounted into running containers.
    try {
      const text = hostsFile(h, [...this.services.values()], this.slicesOf);
      if (!fs.existsSync(h.file) || fs.readFileSync(h.file, "utf8") !== text) fs.writeFileSync(h.file, text);
    } catch (err) {
      this.o.log(`hosts file ${h.file}: ${String(err)}`);
    }
  }

  private sync(): void {
    for (const h of this.hostsFiles.values()) this.writeHosts(h);
    const wanted = new Map<string, { svcKey: string; ip: string; port: number }>();
    for (const [svcKey, svc] of this.services) {
      const ip = svc.spec?.clusterIP;
      if (!ip || ip === "None" || !ip.startsWith("10.96.")) continue;
      for (const p of svc.spec?.ports ?? [])
        if ((p.protocol ?? "TCP") === "TCP") wanted.set(`${ip}:${p.port}`, { svcKey, ip, port: p.port });
    }
    const liveIps = new Set([...wanted.values()].map((w) => w.ip));
    const removedIps = new Set<string>();
    for (const [addr, { server }] of this.proxies)
      if (!wanted.has(addr)) {
        server.close();
        this.proxies.delete(addr);
        removedIps.add(addr.split(":")[0]!);
      }
    for (const [addr, w] of wanted) {
      if (this.proxies.has(addr)) continue;
      ipQuiet(["addr", "add", `${w.ip}/32`, "dev", "lo"]);
      const server = net.createServer((client) => this.forward(client, w.svcKey, w.port));
      server.on("error", (err) => {
        this.o.log(`service proxy ${addr}: ${String(err)}`);
        this.proxies.delete(addr);
      });
      server.listen(w.port, w.ip);
      this.proxies.set(addr, { server, svcKey: w.svcKey });
    }
    for (const ip of removedIps) if (!liveIps.has(ip)) ipQuiet(["addr", "del", `${ip}/32`, "dev", "lo"]);
  }

  private forward(client: net.Socket, svcKey: string, port: number): void {
    const svc = this.services.get(svcKey);
    let backends: Backend[];
    if (svcKey === "default/kubernetes") backends = [this.o.apiserver];
    else {
      const portName = svc?.spec?.ports?.find((p) => p.port === port)?.name;
      backends = svc ? readyBackends(this.slicesOf(svc), portName) : [];
    }
    const b = backends[Math.floor(Math.random() * backends.length)];
    if (!b) {
      client.destroy(); // like a Service without ready endpoints: the connection is refused/reset
      return;
    }
    const upstream = net.connect(b.port, b.host);
    client.pipe(upstream).pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  }
}
