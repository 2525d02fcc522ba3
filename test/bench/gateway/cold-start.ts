// Cold start through the gateway on the test control plane: a ModelApp at zero replicas, a streaming request through
// `gantry gateway`, time to its first token (the operator wakes the app, a pod of the process runtime pulls nothing
// — the model is in its volume after a first, unmeasured start — loads it, and the held request goes on), against
// the same model's own start on this machine (`gantry serve --model` spawned to its first token).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import {
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  waitForCondition,
} from "../../integration/operator/helpers.ts";
import { startTestGateway } from "../../support/gateway.ts";
import { startHubServer } from "../../support/hub-server.ts";
import { smollm2Path } from "../../support/models.ts";
import { loadReportToken, startTestOperator } from "../../support/operator.ts";
import { postStreamingLines } from "../stream-client.ts";
import { median } from "../table.ts";
import { localStartToFirstToken, storeWith } from "./bench.ts";

export interface ColdStartResult {
  gatewayMs: number[];
  localMs: number[];
}

export async function benchColdStart(rounds = 2): Promise<ColdStartResult> {
  const c = await operatorCluster();
  const core = c.kc.makeApiClient(CoreV1Api),
    apps = c.kc.makeApiClient(AppsV1Api);
  const ns = await createTestNamespace(c.kc, "bench-cold");
  const file = await smollm2Path();
  const hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({ org: "bench", repo: "smollm2-GGUF", files: { "smollm2-Q4_1.gguf": file } });
  const op = await startTestOperator(c.cp, {
    watchNamespace: ns,
    hubUrl: `http://${POD_GATEWAY}:${hub.port}`,
    podLabels: { [PROCESS_RUNTIME_LABEL]: "true" },
    autoscaler: { intervalSeconds: 0.5, reportTtlSeconds: 5 },
    leaderElection: {
      name: "gantry-operator-bench-cold",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
  const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-token-")), "token");
  fs.writeFileSync(tokenFile, loadReportToken(c.cp));
  const gw = await startTestGateway(c.cp, { operatorUrls: [op.url], operatorTokenFile: tokenFile, watchNamespace: ns });
  const store = await storeWith("smollm2", file);
  const result: ColdStartResult = { gatewayMs: [], localMs: [] };
  try {
    await createApp(
      c,
      modelApp(ns, "cold", {
        model: "hf.co/bench/smollm2-GGUF:Q4_1",
        auth: "public",
        resources: { profile: "cpu", cpu: "2" },
        server: { parallel: 1, contextLength: 2048 },
        scaling: { minReplicas: 0, maxReplicas: 1, scaleDownDelay: "1s" },
      }),
    );
    await waitForCondition(c, ns, "cold", "Ready", "True", "ScaledToZero");
    const firstToken = async () => {
      const t0 = performance.now();
      let ms = 0;
      await postStreamingLines(
        `${gw.url}/${ns}/cold/api/generate`,
        { model: "hf.co/bench/smollm2-GGUF:Q4_1", prompt: "hi", options: { num_predict: 2 } },
        (line) => {
          if ((JSON.parse(line) as { response?: string }).response) {
            ms = performance.now() - t0;
            return true;
          }
        },
      );
      return ms;
    };
    const atZero = () =>
      eventually(
        "zero pods",
        async () => {
          const d = await apps.readNamespacedDeployment({ name: "cold", namespace: ns });
          const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: "gantry.dev/modelapp=cold" });
          return d.spec?.replicas === 0 && pods.items.length === 0 ? true : undefined;
        },
        120_000,
      );
    await firstToken(); // the first start pulls the model into the volume: not measured
    for (let r = 0; r < rounds; r++) {
      await atZero();
      result.localMs.push(await localStartToFirstToken(store, "smollm2"));
      result.gatewayMs.push(await firstToken());
    }
    return result;
  } finally {
    await gw.stop();
    await op.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await hub.close();
    fs.rmSync(store, { recursive: true, force: true });
  }
}

export const coldStartRow = (r: ColdStartResult) => {
  const g = median(r.gatewayMs),
    l = median(r.localMs);
  return [String(r.gatewayMs.length), l, g, g - l];
};
