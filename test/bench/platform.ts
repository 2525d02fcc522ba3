// The platform CLI's time to a served app: `gantry deploy app.ts::chat` (the installed package's bin) of a model
// already cached in the app's model volume, until its first answered chat request — against the same ModelApp
// applied with `kubectl apply` + `kubectl wait --for=condition=Ready`, side by side in interleaved rounds. Both run on
// the test control plane with the operator and the process runtime (pods really start `gantry serve` and load the
// model: SmolLM2-135M, served by a local hub and pulled into the volume once before the rounds). The first request goes
// as a user's would: to the app's status.url through `gantry gateway` (a real process on the same control plane), with
// a key made by `gantry keys create`. Also runnable: `node test/bench/platform.ts`.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CoreV1Api } from "@kubernetes/client-node";
import { stringify as toYaml } from "yaml";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../cluster/test-cluster.ts";
import { startHubServer } from "../support/hub-server.ts";
import { installedGantry } from "../support/installed-gantry.ts";
import { smollm2Path } from "../support/models.ts";
import { startTestGateway } from "../support/gateway.ts";
import {
  installCrd,
  kubectl,
  kubectlResult,
  loadReportToken,
  podsOperatorConfig,
  startTestOperator,
} from "../support/operator.ts";
import { freePort } from "../support/server.ts";
import { median } from "./table.ts";

const run = promisify(execFile);
const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const SPEC = {
  model: MODEL,
  resources: { profile: "nvidia-gpu", gpus: 1 },
  server: { contextLength: 1024 },
  scaling: { minReplicas: 1, maxReplicas: 1 },
};

export interface PlatformRow {
  path: string;
  readySeconds: number;
  firstAnswerSeconds: number;
  rounds: number;
}

export async function benchPlatform(opts: { rounds?: number } = {}): Promise<PlatformRow[]> {
  const rounds = opts.rounds ?? 3;
  const [cp, gantry] = await Promise.all([ensureTestCluster(), installedGantry()]);
  installCrd(cp);
  kubectlResult(cp, ["create", "namespace", "gantry-system"]);
  const kc = kubeConfigFor(cp);
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await createTestNamespace(kc, "bench-platform");
  const hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "HuggingFaceTB",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  // The operator gives apps URLs under the gateway's address, so the gateway's port is chosen first.
  const gwPort = await freePort();
  const op = await startTestOperator(
    cp,
    podsOperatorConfig({
      namespace: ns,
      hubPort: hub.port,
      lease: "gantry-bench-platform",
      extra: { gatewayUrl: `http://127.0.0.1:${gwPort}` },
    }),
  );
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-platform-"));
  fs.writeFileSync(path.join(work, "token"), loadReportToken(cp));
  const gw = await startTestGateway(
    cp,
    { operatorUrls: [op.url], operatorTokenFile: path.join(work, "token"), watchNamespace: ns },
    gwPort,
  );
  const env = {
    ...process.env,
    KUBECONFIG: cp.kubeconfig,
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
  };
  const { key } = JSON.parse(
    (await run(gantry.bin, ["keys", "create", "--org", ns, "--name", "bench", "--output", "json"], { env })).stdout,
  ) as { key: string };
  fs.writeFileSync(
    path.join(work, "app.ts"),
    `import { defineApp } from "gantry";\nexport const chat = defineApp(${JSON.stringify(SPEC)});\n`,
  );
  const deploy = (name: string) =>
    run(gantry.bin, ["deploy", "app.ts::chat", "--app-name", name, "--org", ns], { cwd: work, env });
  const manifest = (name: string) => {
    const file = path.join(work, `${name}.yaml`);
    fs.writeFileSync(
      file,
      toYaml({ apiVersion: "gantry.dev/v1alpha1", kind: "ModelApp", metadata: { name, namespace: ns }, spec: SPEC }),
    );
    return file;
  };
  /** Sends the first chat request to the app's URL (status.url) through the gateway; resolves when it is answered. */
  const firstAnswer = async (name: string) => {
    const url = kubectl(cp, ["get", "modelapp", name, "-n", ns, "-o", "jsonpath={.status.url}"]).trim();
    if (!url.startsWith(gw.url)) throw new Error(`${name}: status.url ${url} is not under the gateway ${gw.url}`);
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Key ${key}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Hello!" }], max_tokens: 8 }),
    });
    if (r.status !== 200) throw new Error(`${name}: first request ${r.status} ${await r.text()}`);
    await r.json();
  };
  try {
    // A keeper app (no replicas) owns the model volume, so it outlives the measured apps; one deploy pulls the model.
    fs.writeFileSync(
      path.join(work, "keeper.ts"),
      `import { defineApp } from "gantry";\nexport const chat = defineApp(${JSON.stringify({ ...SPEC, scaling: { minReplicas: 0, maxReplicas: 1 } })});\n`,
    );
    await run(gantry.bin, ["deploy", "keeper.ts::chat", "--app-name", "keeper", "--org", ns], { cwd: work, env });
    await deploy("warm");
    kubectl(cp, ["delete", "modelapp", "warm", "-n", ns, "--wait=true", "--timeout=120s"]);
    const times: Record<string, { ready: number[]; answer: number[] }> = {
      gantry: { ready: [], answer: [] },
      kubectl: { ready: [], answer: [] },
    };
    for (let i = 0; i < rounds; i++) {
      for (const how of ["gantry", "kubectl"] as const) {
        const name = `${how === "gantry" ? "g" : "k"}${i}`;
        const t0 = performance.now();
        if (how === "gantry") await deploy(name);
        else {
          kubectl(cp, ["apply", "-f", manifest(name)]);
          kubectl(cp, ["wait", "-n", ns, "--for=condition=Ready", `modelapp/${name}`, "--timeout=600s"]);
        }
        const ready = performance.now();
        await firstAnswer(name);
        const answered = performance.now();
        times[how]!.ready.push((ready - t0) / 1000);
        times[how]!.answer.push((answered - t0) / 1000);
        kubectl(cp, ["delete", "modelapp", name, "-n", ns, "--wait=true", "--timeout=120s"]);
      }
    }
    return [
      { path: "gantry deploy app.ts::chat (installed bin; waits for Ready)", ...pick(times.gantry!), rounds },
      { path: "kubectl apply -f app.yaml + kubectl wait --for=condition=Ready", ...pick(times.kubectl!), rounds },
    ];
  } finally {
    await gw.stop();
    await op.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await hub.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const pick = (t: { ready: number[]; answer: number[] }) => ({
  readySeconds: median(t.ready),
  firstAnswerSeconds: median(t.answer),
});

export const platformTitle = (): string =>
  `Platform: a cached model (SmolLM2-135M in the app's volume) from deploy to its first answered chat request (8 tokens, through the gateway at the app's status.url), on the test control plane with pods really running, median of interleaved rounds (load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs)`;
export const PLATFORM_HEADER = ["path", "to Ready s", "to first answer s", "rounds"];

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const rows = await benchPlatform({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3) });
  printTable(
    platformTitle(),
    PLATFORM_HEADER,
    rows.map((r) => [r.path, r.readySeconds, r.firstAnswerSeconds, String(r.rounds)]),
  );
}
