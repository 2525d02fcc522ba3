// Where the control plane's binaries live: build-bins.sh builds them once per version set into the cache (outside
// the repo) and prints the directory; with a warm cache it returns at once.
import { spawnSync } from "node:child_process";
import path from "node:path";

export const BINARIES = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kubectl",
  "kwok",
  "helm",
] as const;

/**
 * Runs build-bins.sh (stderr passes through so a cold build shows its progress) and returns the binaries dir; with
 * `kubelet`, the real node's kubelet, pause binary and CoreDNS too.
 */
export function ensureBinaries(opts: { kubelet?: boolean } = {}): string {
  const started = Date.now();
  const r = spawnSync(
    "bash",
    [path.join(import.meta.dirname, "build-bins.sh"), ...(opts.kubelet ? ["--kubelet"] : [])],
    {
      stdio: ["ignore", "pipe", "inherit"],
      encoding: "utf8",
    },
  );
  if (r.status !== 0) throw new Error(`build-bins.sh failed with exit code ${r.status}`);
  const dir = r.stdout.trim().split("\n").pop() ?? "";
  if (!dir) throw new Error("build-bins.sh printed no directory");
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `test-cluster: binaries ready in ${dir} (${[...BINARIES, ...(opts.kubelet ? ["kubelet", "pause", "coredns"] : [])].join(", ")}) after ${secs}s\n`,
  );
  return dir;
}
