import assert from "node:assert/strict";
import { test } from "node:test";
import { PREPARE_EXIT_MODEL_NOT_FOUND } from "../../../../operator/api/v1alpha1/prepare.ts";
import { renderDeployment } from "../../../../operator/render/deployment.ts";
import { selectorLabels } from "../../../../operator/render/labels.ts";
import { renderModelCacheJob } from "../../../../operator/render/model-cache-job.ts";
import { renderService } from "../../../../operator/render/service.ts";
import { config, resolved } from "../fixtures.ts";

type Pod = {
  metadata: { labels: Record<string, string> };
  spec: {
    restartPolicy: string;
    nodeSelector?: Record<string, string>;
    tolerations?: unknown[];
    initContainers?: unknown[];
    containers: Array<{ name: string; args: string[]; resources?: unknown }>;
    volumes: Array<{ name: string }>;
  };
};
const jobOf = (app = resolved(), cfg = config()) =>
  renderModelCacheJob(app, cfg) as unknown as {
    metadata: {
      name: string;
      labels: Record<string, string>;
      ownerReferences: Array<{ uid: string; controller: boolean }>;
    };
    spec: { backoffLimit: number; podFailurePolicy: { rules: unknown[] }; template: Pod };
  };

test("the model cache Job runs the app's prepare step alone, where the servers run, without asking for a GPU", () => {
  const cfg = config({
    podLabels: { "gantry.dev/runtime": "process" },
    resourceProfiles: {
      "nvidia-gpu": {
        gpuResource: "nvidia.com/gpu",
        nodeSelector: { pool: "gpu" },
        tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
      },
    },
  });
  const app = resolved({ resources: { profile: "nvidia-gpu", gpus: 1 }, modelfile: "SYSTEM be terse" }, cfg);
  const job = jobOf(app, cfg);
  const pod = job.spec.template;
  const server = (renderDeployment(app, cfg) as unknown as { spec: { template: Pod } }).spec.template;
  assert.deepEqual(pod.spec.containers, server.spec.initContainers, "the same prepare step as a replica's");
  assert.equal(pod.spec.initContainers, undefined);
  assert.deepEqual(pod.spec.containers[0]!.args.slice(0, 2), ["prepare", app.spec.model]);
  assert.equal(pod.spec.containers[0]!.resources, undefined, "no GPU, no reservation");
  assert.equal(pod.spec.restartPolicy, "Never");
  assert.deepEqual([pod.spec.nodeSelector, pod.spec.tolerations], [server.spec.nodeSelector, server.spec.tolerations]);
  assert.deepEqual(pod.spec.volumes, server.spec.volumes, "the model volume and the Modelfile");
  assert.equal(pod.metadata.labels["gantry.dev/runtime"], "process", "the operator's pod labels");
  assert.equal(job.metadata.ownerReferences[0]?.controller, true);
  assert.equal(
    job.metadata.labels["app.kubernetes.io/managed-by"],
    "gantry-operator",
    "the operator's Jobs cache sees it",
  );
});

test("the Job's pod is the app's (its label) but never a server: neither the Deployment's nor the Service's selector takes it", () => {
  const app = resolved();
  const labels = jobOf(app).spec.template.metadata.labels;
  assert.equal(labels["gantry.dev/modelapp"], "chat");
  const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
  const service = renderService(app, config()) as unknown as { spec: { selector: Record<string, string> } };
  assert.equal(selects(selectorLabels(app)), false);
  assert.equal(selects(service.spec.selector), false);
});

test("a model the hub lacks fails the Job at once; other failures are tried again; an eviction is no failure", () => {
  const job = jobOf();
  assert.equal(job.spec.backoffLimit, 3);
  assert.deepEqual(job.spec.podFailurePolicy.rules, [
    {
      action: "FailJob",
      onExitCodes: { containerName: "prepare", operator: "In", values: [PREPARE_EXIT_MODEL_NOT_FOUND] },
    },
    { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget" }] },
  ]);
});

test("the Job's name: another for another model or Modelfile (a Job's pod cannot change), at most 63 characters", () => {
  const a = jobOf(resolved()).metadata.name;
  assert.match(a, /^chat-cache-[0-9a-f]{6}$/);
  assert.equal(jobOf(resolved()).metadata.name, a, "deterministic");
  assert.notEqual(jobOf(resolved({ model: "hf.co/org/other:Q4_K_M" })).metadata.name, a);
  assert.notEqual(jobOf(resolved({ modelfile: "SYSTEM hi" })).metadata.name, a);
  assert.equal(jobOf(resolved({ scaling: { maxReplicas: 5 } })).metadata.name, a, "scaling is not the Job's business");
  const long = "a".repeat(53);
  const name = jobOf(resolved({}, config(), { name: long })).metadata.name;
  assert.ok(name.length <= 63, name);
  assert.match(name, /^a+-cache-[0-9a-f]{6}$/);
});
