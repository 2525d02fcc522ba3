// How often usage is written to the cluster under load: the gateway's usage store (kube/usage-store.ts, a flush
// every 5 s, the default) meters a steady stream of requests for two orgs (several keys and apps each) for a while;
// every write to a usage ConfigMap is counted. The writes depend on the orgs with traffic and the flush interval, not
// on the request rate.
import { CoreV1Api } from "@kubernetes/client-node";
import { silentLogger } from "../../../server/common/logger.ts";
import { KubeUsage } from "../../../server/gateway/kube/usage-store.ts";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";

export async function benchUsageWrites(opts: { seconds?: number; rps?: number } = {}) {
  const seconds = opts.seconds ?? 30,
    rps = opts.rps ?? 2000;
  const cp = await ensureTestCluster();
  const kc = kubeConfigFor(cp);
  const orgs = [await createTestNamespace(kc, "bench-usage"), await createTestNamespace(kc, "bench-usage")];
  let writes = 0,
    conflicts = 0;
  const store = new KubeUsage(kc, {
    flushMs: 5000,
    retentionDays: 7,
    logger: silentLogger,
    onWrite: (r) => {
      if (r === "ok") writes++;
      else conflicts++;
    },
  });
  await store.start();
  let metered = 0;
  const t0 = Date.now();
  try {
    while (Date.now() - t0 < seconds * 1000) {
      for (let i = 0; i < rps / 10; i++, metered++)
        store.record({
          org: orgs[metered % 2]!,
          app: `app-${metered % 3}`,
          keyId: `key${metered % 5}`.padEnd(16, "0"),
          status: 200,
          promptTokens: 20,
          completionTokens: 100,
          durationMs: 500,
          at: Date.now(),
        });
      await new Promise((r) => setTimeout(r, 100));
    }
    await store.stop();
    const elapsed = (Date.now() - t0) / 1000;
    return {
      seconds: elapsed,
      metered,
      orgs: orgs.length,
      writes,
      conflicts,
      writesPerOrgPerMinute: (writes / orgs.length / elapsed) * 60,
    };
  } finally {
    const core = kc.makeApiClient(CoreV1Api);
    for (const ns of orgs) await core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
}
