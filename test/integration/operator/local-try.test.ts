// `gantry operator` tried as a new user tries it from the README: next to a cluster (a fresh control plane of this
// test's own: no gantry-system namespace, nothing installed), with KUBECONFIG and no config file. It says why it is
// not ready while the CRD is missing, reconciles a ModelApp applied with kubectl once it is there, and a leader
// election that cannot work (its Lease's namespace does not exist) stops it at once with one clear line.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { startControlPlane, stopControlPlane, type ControlPlane } from "../../cluster/control-plane.ts";
import { kubeConfigFor } from "../../cluster/test-cluster.ts";
import { freePort, GANTRY, spawnGantry, type GantryProcess } from "../../support/server.ts";
import { installCrd, kubectl } from "../../support/operator.ts";
import { eventually } from "./helpers.ts";
import { GROUP, PLURAL, VERSION, type ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";

let cp: ControlPlane;
let op: GantryProcess;
let url: string;

before(async () => {
  // Fresh, so nothing another test created (gantry-system, the CRD) is there; no fake nodes needed to reconcile.
  cp = await startControlPlane({ withKwok: false });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  // As the README says: `gantry operator` with KUBECONFIG set (GANTRY_OPERATOR_LISTEN only moves it off :8080).
  op = await spawnGantry(
    ["operator"],
    { KUBECONFIG: cp.kubeconfig, GANTRY_OPERATOR_LISTEN: `127.0.0.1:${port}`, KUBERNETES_SERVICE_HOST: "" },
    `${url}/healthz`,
    (status) => status === 200,
  );
});

after(async () => {
  await op?.stop();
  if (cp) await stopControlPlane(cp.dir);
});

test("without the CRD, /readyz is 503 and says the CRD is missing; once it is applied the operator is ready", async () => {
  const reason = await eventually("/readyz to name the missing CRD", async () => {
    const r = await fetch(`${url}/readyz`);
    const body = (await r.json()) as { status: string; reason?: string };
    return r.status === 503 && /CRD is not installed/.test(body.reason ?? "") ? body.reason : undefined;
  });
  assert.match(reason!, /kubectl apply --server-side -f crds\//);
  installCrd(cp);
  await eventually("/readyz 200", async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined));
  assert.match(op.logs(), /"leaderElection":"off: not running in a pod/);
  assert.doesNotMatch(op.logs(), /lease request failed/);
});

test("a ModelApp applied with kubectl is reconciled: Deployment, Service, volume and status", async () => {
  installCrd(cp); // done by the test above; again here so this test stands alone
  kubectl(cp, ["create", "namespace", "acme"]);
  kubectl(
    cp,
    ["apply", "-f", "-"],
    [
      "apiVersion: gantry.dev/v1alpha1",
      "kind: ModelApp",
      "metadata: { name: chat, namespace: acme }",
      "spec:",
      "  model: hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
      "  auth: private",
      "  scaling: { minReplicas: 1 }",
    ].join("\n"),
  );
  const kc = kubeConfigFor(cp);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const app = await eventually("the app's status", async () => {
    const a = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: "acme",
      plural: PLURAL,
      name: "chat",
    })) as ModelApp;
    return a.status?.observedGeneration === a.metadata.generation ? a : undefined;
  });
  const types = (app.status?.conditions ?? []).map((c) => c.type).sort();
  assert.deepEqual(types, ["ModelCached", "Ready", "Scheduled"]);
  const deployment = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: "chat", namespace: "acme" });
  assert.equal(deployment.spec?.replicas, 1);
  const core = kc.makeApiClient(CoreV1Api);
  assert.ok(await core.readNamespacedService({ name: "chat", namespace: "acme" }));
  assert.equal((await core.listNamespacedPersistentVolumeClaim({ namespace: "acme" })).items.length, 1);
});

test("leader election in a namespace that does not exist: the operator exits at once with one clear line", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-operator-"));
  const config = path.join(dir, "operator.yaml");
  fs.writeFileSync(config, "leaderElection: { enabled: true, namespace: gantry-system }\n");
  const port = await freePort();
  const proc = spawn(process.execPath, [GANTRY, "operator", "--config", config], {
    env: { ...process.env, KUBECONFIG: cp.kubeconfig, GANTRY_OPERATOR_LISTEN: `127.0.0.1:${port}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const started = Date.now();
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  clearTimeout(timer);
  assert.equal(code, 1, out);
  assert.ok(Date.now() - started < 20_000, "at once, not after retrying");
  const errors = out.split("\n").filter((l) => l.includes('"level":"error"'));
  assert.equal(errors.length, 1, out);
  assert.match(errors[0]!, /namespace \\"gantry-system\\" does not exist/);
  assert.match(errors[0]!, /kubectl create namespace gantry-system/);
  assert.doesNotMatch(out, /lease request failed/, "no warning every 2 s");
});
