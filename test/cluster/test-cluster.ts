// One control plane shared by a whole test run (and by a developer's shell after `npm run cluster:up`): its record
// is $GANTRY_CACHE/cluster/current.json, or the run dir named by GANTRY_TEST_CLUSTER_DIR. A healthy recorded cluster
// is reused; otherwise a new one is started (building the binaries first when the cache is cold).
import fs from "node:fs";
import path from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { withDirLock } from "../../server/common/dir-lock.ts";
import type { ClusterRecord, ControlPlane } from "./control-plane.ts";
import {
  clusterHealthy,
  gantryCache,
  readClusterRecord,
  startControlPlane,
  stopControlPlane,
} from "./control-plane.ts";

const clusterRoot = (): string => path.join(gantryCache(), "cluster");
const currentFile = (): string => path.join(clusterRoot(), "current.json");

export function currentCluster(): ClusterRecord | undefined {
  const dir = process.env.GANTRY_TEST_CLUSTER_DIR;
  if (dir) return readClusterRecord(dir);
  if (!fs.existsSync(currentFile())) return undefined;
  const { dir: recorded } = JSON.parse(fs.readFileSync(currentFile(), "utf8")) as { dir: string };
  return readClusterRecord(recorded);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A lock dir holding the owner's pid, so parallel test files start one cluster, not several. */
const withLock = <T>(fn: () => Promise<T>): Promise<T> => withDirLock(path.join(clusterRoot(), "lock"), fn);

/**
 * The shared test cluster: reuses a healthy recorded one, else starts one. Its stop() stops it for everybody, so
 * tests normally leave it running (`npm run cluster:down` stops it).
 */
export async function ensureTestCluster(): Promise<ControlPlane> {
  const started = Date.now();
  return withLock(async () => {
    const cur = currentCluster();
    if (cur && (await clusterHealthy(cur.dir))) {
      process.stderr.write(
        `test-cluster: reusing ${cur.apiUrl} (${cur.dir}) after ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
      );
      return { ...cur, stop: () => stopControlPlane(cur.dir) };
    }
    if (cur) {
      process.stderr.write(`test-cluster: recorded cluster ${cur.dir} is unhealthy: stopping it\n`);
      await stopControlPlane(cur.dir);
    }
    const dir = process.env.GANTRY_TEST_CLUSTER_DIR;
    const cp = await startControlPlane(dir ? { dir } : {});
    if (!dir) fs.writeFileSync(currentFile(), JSON.stringify({ dir: cp.dir }));
    process.stderr.write(`test-cluster: set-up took ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
    return cp;
  });
}

/** Stops the recorded cluster, if any. */
export async function stopTestCluster(): Promise<boolean> {
  return withLock(async () => {
    const cur = currentCluster();
    if (!cur) return false;
    await stopControlPlane(cur.dir);
    if (!process.env.GANTRY_TEST_CLUSTER_DIR) fs.rmSync(currentFile(), { force: true });
    return true;
  });
}

export function kubeConfigFor(cp: Pick<ControlPlane, "kubeconfig">): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfig);
  return kc;
}

/**
 * A fresh namespace, returned once its `default` ServiceAccount exists (pods created before that are rejected by the
 * ServiceAccount admission plugin).
 */
export async function createTestNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await core.createNamespace({ body: { metadata: { generateName: `${prefix}-` } } });
  const name = ns.metadata?.name ?? "";
  for (let i = 0; i < 120; i++) {
    try {
      await core.readNamespacedServiceAccount({ name: "default", namespace: name });
      return name;
    } catch {
      await sleep(250);
    }
  }
  throw new Error(`namespace ${name}: default ServiceAccount never appeared`);
}
