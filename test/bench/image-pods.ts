// `npm run bench image`, its pods part: the same ModelApp's first token after a scale from zero, as a real pod (the
// image in a containerd container on the test cluster's real node: test/cluster/real-node.ts) against a process pod
// (the process runtime runs this checkout's `gantry serve` as a host process). The model (SmolLM2-135M) is already in
// the app's volume; the clock runs from a streamed chat request sent through the gateway to the app at zero replicas
// (the gateway holds it and wakes the app: the operator scales up, the pod starts and loads the model) to its first
// content token. The operator and the gateway run on the host, one pair per kind; rounds alternate the kinds.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CoreV1Api } from "@kubernetes/client-node";
import OpenAI from "openai";
import { PROCESS_RUNTIME_LABEL } from "../cluster/kwok-config.ts";
import { REAL_NODE_GATEWAY, REAL_NODE_LABEL, startRealNode } from "../cluster/real-node.ts";
import { POD_GATEWAY } from "../cluster/runtime/pod-network.ts";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../cluster/test-cluster.ts";
import { containerImage, importIntoNode } from "../support/container-image.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { startHubServer } from "../support/hub-server.ts";
import { smollm2Path } from "../support/models.ts";
import { loadReportToken, startTestOperator, type TestOperator } from "../support/operator.ts";
import { freePort, GANTRY } from "../support/server.ts";
import { median } from "./table.ts";

const sh = promisify(execFile);
const MODEL = "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const APP = "chat";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = "process pod" | "real pod";
interface Side {
  kind: Kind;
  ns: string;
  op: TestOperator;
  gw: TestGateway;
  key: string;
}

export async function benchImagePods(rounds: number, report: (row: [string, string]) => void): Promise<void> {
  const [cp, img, hub] = await Promise.all([
    ensureTestCluster(),
    containerImage(),
    startHubServer({ host: "0.0.0.0" }),
  ]);
  const node = await startRealNode(cp, { cmd: img.engine, env: img.env });
  await importIntoNode(img, node);
  await hub.register({
    org: "bartowski",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  const kc = kubeConfigFor(cp);
  const core = kc.makeApiClient(CoreV1Api);
  const kubectl = (args: string[]) => sh(path.join(cp.binDir, "kubectl"), [`--kubeconfig=${cp.kubeconfig}`, ...args]);
  const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-pods-")), "token");
  fs.writeFileSync(tokenFile, loadReportToken(cp));
  const profile = { cpu: "1", memory: "1Gi" };
  const start = async (kind: Kind): Promise<Side> => {
    const ns = await createTestNamespace(kc, kind === "real pod" ? "bench-real" : "bench-process");
    const gwPort = await freePort();
    const real = kind === "real pod";
    const op = await startTestOperator(cp, {
      watchNamespace: ns,
      image: img.image,
      hubUrl: `http://${real ? REAL_NODE_GATEWAY : POD_GATEWAY}:${hub.port}`,
      gatewayUrl: `http://127.0.0.1:${gwPort}`,
      podLabels: real ? {} : { [PROCESS_RUNTIME_LABEL]: "true" },
      resourceProfiles: {
        cpu: real
          ? {
              ...profile,
              nodeSelector: { [REAL_NODE_LABEL]: "true" },
              tolerations: [{ key: REAL_NODE_LABEL, operator: "Equal", value: "true", effect: "NoSchedule" }],
            }
          : profile,
      },
      autoscaler: { intervalSeconds: 0.5, reportTtlSeconds: 10 },
      leaderElection: { name: `${ns}-op`, leaseDurationSeconds: 4, renewDeadlineSeconds: 3, retryPeriodSeconds: 1 },
    });
    const gw = await startTestGateway(
      cp,
      { operatorUrls: [op.url], operatorTokenFile: tokenFile, watchNamespace: ns },
      gwPort,
    );
    const { stdout } = await sh(process.execPath, [GANTRY, "keys", "create", "--org", ns, "--name", "bench"], {
      env: { ...process.env, KUBECONFIG: cp.kubeconfig },
    });
    const app = {
      apiVersion: "gantry.dev/v1alpha1",
      kind: "ModelApp",
      metadata: { name: APP, namespace: ns },
      spec: { model: MODEL, auth: "private", scaling: { minReplicas: 0, maxReplicas: 1, scaleDownDelay: "1s" } },
    };
    const file = path.join(path.dirname(tokenFile), `${ns}.json`);
    fs.writeFileSync(file, JSON.stringify(app));
    await kubectl(["apply", "-f", file]);
    return { kind, ns, op, gw, key: stdout.trim() };
  };
  /** ms from the request to the first content token (the app at zero replicas). */
  const firstToken = async (s: Side): Promise<number> => {
    const openai = new OpenAI({
      baseURL: `${s.gw.url}/${s.ns}/${APP}/v1`,
      apiKey: s.key,
      maxRetries: 0,
      timeout: 600_000,
    });
    const t = performance.now();
    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 8,
      stream: true,
    });
    let ms = 0;
    for await (const chunk of stream) if (!ms && chunk.choices[0]?.delta?.content) ms = performance.now() - t;
    return ms;
  };
  /**
   * Back at zero: no serving pod of the app left (the autoscaler scales down after the app's 1 s delay); the model
   * cache Job's finished pod may stay.
   */
  const atZero = async (s: Side): Promise<void> => {
    for (let i = 0; i < 1200; i++) {
      const pods = (await core.listNamespacedPod({ namespace: s.ns })).items;
      if (pods.every((p) => p.status?.phase === "Succeeded")) return;
      await sleep(250);
    }
    throw new Error(`${s.kind}: the app's pod never went away`);
  };
  const sides: Side[] = [];
  try {
    for (const kind of ["process pod", "real pod"] as const) sides.push(await start(kind));
    // The first wake pulls the model into the app's volume; the measured wakes find it there.
    for (const s of sides) {
      await firstToken(s);
      await atZero(s);
    }
    const times = new Map<Kind, number[]>(sides.map((s) => [s.kind, []]));
    for (let i = 0; i < rounds; i++)
      for (const s of sides) {
        times.get(s.kind)!.push(await firstToken(s));
        await atZero(s);
      }
    for (const s of sides) {
      const ts = times.get(s.kind)!;
      report([
        `app at zero to first token, model in the volume, ${s.kind} (median of ${rounds})`,
        `${(median(ts) / 1000).toFixed(1)} s (${ts.map((x) => (x / 1000).toFixed(1)).join(", ")})`,
      ]);
    }
  } finally {
    for (const s of sides) {
      await s.gw.stop();
      await s.op.stop();
      await core.deleteNamespace({ name: s.ns }).catch(() => undefined);
    }
    await hub.close();
  }
}
