// `node test/cluster/cli.ts up|down|status`: the test control plane from a shell (up.sh, down.sh, npm run cluster:up).
import { clusterHealthy } from "./control-plane.ts";
import { currentCluster, ensureTestCluster, stopTestCluster } from "./test-cluster.ts";

async function cli(cmd: string | undefined): Promise<void> {
  if (cmd === "up") {
    const cp = await ensureTestCluster();
    console.log(`export PATH="${cp.binDir}:$PATH"`);
    console.log(`export KUBECONFIG=${cp.kubeconfig}`);
  } else if (cmd === "down") {
    console.log((await stopTestCluster()) ? "test cluster stopped" : "no test cluster was running");
  } else if (cmd === "status") {
    const cur = currentCluster();
    console.log(
      cur && (await clusterHealthy(cur.dir))
        ? `healthy: ${cur.apiUrl} (KUBECONFIG=${cur.kubeconfig})`
        : "no healthy test cluster",
    );
  } else {
    console.error("usage: cli.ts up|down|status");
    process.exitCode = 2;
  }
}

cli(process.argv[2]).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
