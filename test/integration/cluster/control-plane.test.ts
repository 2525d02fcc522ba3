// The control plane's life cycle, on a cluster of its own (GANTRY_TEST_CLUSTER_DIR), next to the shared one: reuse
// while healthy, replacement when a component died, and stop by recorded pids only.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { clusterHealthy } from "../../cluster/control-plane.ts";
import { isOurs, readRecorded } from "../../cluster/processes.ts";
import { ensureTestCluster, kubeConfigFor, stopTestCluster } from "../../cluster/test-cluster.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cp-"));
const previous = process.env.GANTRY_TEST_CLUSTER_DIR;

after(async () => {
  process.env.GANTRY_TEST_CLUSTER_DIR = dir;
  await stopTestCluster().catch(() => undefined);
  if (previous === undefined) delete process.env.GANTRY_TEST_CLUSTER_DIR;
  else process.env.GANTRY_TEST_CLUSTER_DIR = previous;
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a cluster is reused while healthy, replaced when a component died, and stopped by its recorded pids", async () => {
  process.env.GANTRY_TEST_CLUSTER_DIR = dir;
  const first = await ensureTestCluster();
  assert.equal(first.dir, dir);
  const nodes = (await kubeConfigFor(first).makeApiClient(CoreV1Api).listNode()).items
    .map((n) => n.metadata?.name)
    .sort();
  assert.deepEqual(nodes, ["cpu-node-0", "gpu-node-0", "gpu-node-1"]);
  const names = readRecorded(dir).map((p) => p.name);
  assert.deepEqual(names, [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "process-runtime",
  ]);

  const again = await ensureTestCluster();
  assert.equal(again.apiUrl, first.apiUrl, "a healthy cluster is reused");

  const kwok = readRecorded(dir).find((p) => p.name === "kwok");
  assert.ok(kwok);
  process.kill(kwok.pid, "SIGKILL");
  for (let i = 0; i < 40 && isOurs(kwok.pid, dir); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await clusterHealthy(dir), false);
  const replaced = await ensureTestCluster();
  assert.notEqual(replaced.apiUrl, first.apiUrl, "an unhealthy cluster is replaced");
  assert.equal(await clusterHealthy(dir), true);

  const pids = readRecorded(dir).map((p) => p.pid);
  assert.equal(await stopTestCluster(), true);
  for (const pid of pids) assert.equal(isOurs(pid, dir), false);
  assert.equal(fs.existsSync(dir), false);
});
