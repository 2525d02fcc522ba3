import assert from "node:assert/strict";
import { test } from "node:test";
import type { OperatorConfig } from "../../../../operator/config.ts";
import {
  MODELFILE_DIR,
  MODELS_PATH,
  PREPARE_CONTAINER,
  renderDeployment,
  RUN_AS_USER,
  SERVER_CONTAINER,
} from "../../../../operator/render/deployment.ts";
import { SPEC_HASH_ANNOTATION } from "../../../../operator/render/labels.ts";
import type { ResolvedApp } from "../../../../operator/render/resolve.ts";
import { config, MODEL, resolved } from "../fixtures.ts";

type EnvVar = { name: string; value?: string; valueFrom?: unknown };
type Container = {
  name: string;
  image: string;
  imagePullPolicy?: string;
  args: string[];
  env: EnvVar[];
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: { httpGet: { path: string; port: string }; failureThreshold: number; periodSeconds: number };
  startupProbe?: { httpGet: { path: string; port: string }; failureThreshold: number; periodSeconds: number };
  ports?: { name: string; containerPort: number }[];
  securityContext: { allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
};
type PodSpec = {
  nodeSelector?: Record<string, string>;
  tolerations?: Record<string, unknown>[];
  runtimeClassName?: string;
  securityContext: { runAsNonRoot: boolean; runAsUser: number; fsGroup: number };
  automountServiceAccountToken: boolean;
  initContainers: Container[];
  containers: Container[];
  volumes: { name: string; persistentVolumeClaim?: { claimName: string }; configMap?: { name: string } }[];
};

function render(app: ResolvedApp, cfg: OperatorConfig = config()) {
  const d = renderDeployment(app, cfg);
  const pod = d.spec.template.spec as unknown as PodSpec;
  const server = pod.containers.find((c) => c.name === SERVER_CONTAINER)!;
  const prepare = pod.initContainers.find((c) => c.name === PREPARE_CONTAINER)!;
  const env = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e.value]));
  return {
    d,
    pod,
    server,
    prepare,
    serverEnv: env(server),
    prepareEnv: env(prepare),
    hash: d.spec.template.metadata.annotations[SPEC_HASH_ANNOTATION],
  };
}

const gpuApp = (spec: Record<string, unknown> = {}) =>
  resolved({ resources: { profile: "nvidia-gpu", gpus: 2 }, ...spec });

test("the Deployment is named after the app, in its namespace, controlled by it", () => {
  const { d } = render(resolved({ scaling: { minReplicas: 1, maxReplicas: 3 } }));
  assert.equal(d.apiVersion, "apps/v1");
  assert.equal(d.kind, "Deployment");
  assert.equal(d.metadata.name, "chat");
  assert.equal(d.metadata.namespace, "acme");
  assert.deepEqual(d.metadata.ownerReferences, [
    {
      apiVersion: "gantry.dev/v1alpha1",
      kind: "ModelApp",
      name: "chat",
      uid: "u1",
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.equal(d.spec.replicas, 1);
});

test("the selector is the app's selector labels, and the pod carries them", () => {
  const { d } = render(resolved());
  const selector = d.spec.selector.matchLabels;
  assert.equal(selector["gantry.dev/modelapp"], "chat");
  for (const [k, v] of Object.entries(selector)) assert.equal(d.spec.template.metadata.labels[k], v, k);
});

test("a GPU profile requests and limits the GPUs, tolerates the GPU taint and runs the server on CUDA", () => {
  const { server, pod, serverEnv } = render(gpuApp());
  assert.equal(server.resources?.requests?.["nvidia.com/gpu"], "2");
  assert.equal(server.resources?.limits?.["nvidia.com/gpu"], "2");
  assert.deepEqual(pod.tolerations, [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
  assert.equal(serverEnv.GANTRY_GPU, "cuda");
});

test("a GPU profile with gpus 0 requests no GPU and runs the server on the CPU", () => {
  const { server, serverEnv } = render(resolved({ resources: { profile: "nvidia-gpu", gpus: 0 } }));
  assert.equal(server.resources?.requests?.["nvidia.com/gpu"], undefined);
  assert.equal(server.resources?.limits?.["nvidia.com/gpu"], undefined);
  assert.equal(serverEnv.GANTRY_GPU, "off");
});

test("GANTRY_GPU follows the profile: off on the CPU profile, the profile's backend on a GPU one", () => {
  assert.equal(render(resolved()).serverEnv.GANTRY_GPU, "off");
  const vulkan = config({ resourceProfiles: { amd: { gpuResource: "amd.com/gpu", gpuBackend: "vulkan" } } });
  assert.equal(render(resolved({ resources: { profile: "amd" } }, vulkan), vulkan).serverEnv.GANTRY_GPU, "vulkan");
  const unnamed = config({ resourceProfiles: { other: { gpuResource: "example.com/gpu" } } });
  assert.equal(render(resolved({ resources: { profile: "other" } }, unnamed), unnamed).serverEnv.GANTRY_GPU, "cuda");
});

test("a CPU profile has no GPU resources, tolerations or node selector", () => {
  const { server, pod } = render(resolved());
  assert.deepEqual(server.resources, {});
  assert.equal(pod.tolerations, undefined);
  assert.equal(pod.nodeSelector, undefined);
  assert.equal(pod.runtimeClassName, undefined);
});

test("CPU and memory: requests from the spec, memory also as limit; GANTRY_THREADS follows a whole CPU request", () => {
  // cpu → GANTRY_THREADS (undefined: not set)
  const cases: [string | number, string | undefined][] = [
    ["2", "2"],
    [4, "4"],
    ["1500m", "1"],
    ["1", "1"],
    ["500m", undefined],
    ["0.5", undefined],
  ];
  for (const [cpu, threads] of cases) {
    const { server, serverEnv } = render(resolved({ resources: { cpu, memory: "8Gi" } }));
    assert.equal(server.resources?.requests?.cpu, String(cpu), String(cpu));
    assert.equal(server.resources?.limits?.cpu, undefined, "no CPU limit (throttling)");
    assert.equal(server.resources?.requests?.memory, "8Gi");
    assert.equal(server.resources?.limits?.memory, "8Gi");
    assert.equal(serverEnv.GANTRY_THREADS, threads, `cpu ${cpu}`);
  }
  assert.equal(render(resolved()).serverEnv.GANTRY_THREADS, undefined, "no CPU request, no thread count");
});

test("the profile's CPU and memory apply unless the spec sets its own", () => {
  const cfg = config({ resourceProfiles: { big: { cpu: "8", memory: "32Gi" } } });
  const fromProfile = render(resolved({ resources: { profile: "big" } }, cfg));
  assert.deepEqual(fromProfile.server.resources, {
    requests: { cpu: "8", memory: "32Gi" },
    limits: { memory: "32Gi" },
  });
  assert.equal(fromProfile.serverEnv.GANTRY_THREADS, "8");
  const own = render(resolved({ resources: { profile: "big", cpu: "2", memory: "4Gi" } }, cfg));
  assert.deepEqual(own.server.resources, { requests: { cpu: "2", memory: "4Gi" }, limits: { memory: "4Gi" } });
});

test("node selector: the profile's merged with the spec's, the spec winning; tolerations: the profile's then the spec's", () => {
  const cfg = config({
    resourceProfiles: {
      l4: {
        gpuResource: "nvidia.com/gpu",
        nodeSelector: { accelerator: "l4", pool: "gpu" },
        tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
        runtimeClassName: "nvidia",
        image: "gantry:cuda",
      },
    },
  });
  const { pod, server, prepare } = render(
    resolved(
      {
        resources: { profile: "l4" },
        nodeSelector: { pool: "reserved", zone: "a" },
        tolerations: [{ key: "dedicated", operator: "Equal", value: "ml", effect: "NoExecute" }],
      },
      cfg,
    ),
  );
  assert.deepEqual(pod.nodeSelector, { accelerator: "l4", pool: "reserved", zone: "a" });
  assert.deepEqual(pod.tolerations, [
    { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" },
    { key: "dedicated", operator: "Equal", value: "ml", effect: "NoExecute" },
  ]);
  assert.equal(pod.runtimeClassName, "nvidia");
  assert.equal(server.image, "gantry:cuda");
  assert.equal(prepare.image, "gantry:cuda");
});

test("image: the spec's, else the profile's, else the operator's; the pull policy from the config", () => {
  const cfg = config({ image: "op:1", imagePullPolicy: "IfNotPresent", resourceProfiles: { p: { image: "prof:1" } } });
  assert.equal(render(resolved({}, cfg), cfg).server.image, "op:1");
  assert.equal(render(resolved({ resources: { profile: "p" } }, cfg), cfg).server.image, "prof:1");
  assert.equal(render(resolved({ resources: { profile: "p" }, image: "mine:2" }, cfg), cfg).server.image, "mine:2");
  const { server, prepare } = render(resolved({}, cfg), cfg);
  assert.equal(server.imagePullPolicy, "IfNotPresent");
  assert.equal(prepare.imagePullPolicy, "IfNotPresent");
  assert.equal(render(resolved()).server.imagePullPolicy, undefined);
});

test("the prepare init container pulls the model into the volume and reports to the termination log", () => {
  const { prepare, pod } = render(resolved());
  assert.deepEqual(prepare.args, ["prepare", MODEL, "--report", "/dev/termination-log"]);
  assert.deepEqual(prepare.volumeMounts, [{ name: "models", mountPath: MODELS_PATH }]);
  assert.deepEqual(pod.volumes, [{ name: "models", persistentVolumeClaim: { claimName: "models" } }]);
  assert.equal(pod.initContainers.length, 1);
});

test("with a Modelfile, prepare creates the app's model from the mounted ConfigMap", () => {
  const { prepare, server, pod } = render(resolved({ modelfile: "SYSTEM hi" }));
  assert.deepEqual(prepare.args, [
    "prepare",
    MODEL,
    "--modelfile",
    `${MODELFILE_DIR}/Modelfile`,
    "--as",
    "chat:latest",
    "--report",
    "/dev/termination-log",
  ]);
  assert.deepEqual(prepare.volumeMounts, [
    { name: "models", mountPath: MODELS_PATH },
    { name: "modelfile", mountPath: MODELFILE_DIR, readOnly: true },
  ]);
  assert.deepEqual(
    pod.volumes.find((v) => v.name === "modelfile"),
    { name: "modelfile", configMap: { name: "chat-modelfile" } },
  );
  assert.deepEqual(server.args, ["serve", "--model", "chat:latest"]);
});

test("spec.server.draftModel: a prepare step pulls it first, and the served model drafts with it", () => {
  const { prepare, server, pod } = render(
    resolved({ modelfile: "SYSTEM hi", server: { draftModel: "hf.co/acme/draft-GGUF:Q4_K_M" } }),
  );
  assert.deepEqual(
    pod.initContainers.map((c) => c.name),
    [`${PREPARE_CONTAINER}-draft`, PREPARE_CONTAINER],
  );
  assert.deepEqual(pod.initContainers[0]!.args, [
    "prepare",
    "hf.co/acme/draft-GGUF:Q4_K_M",
    "--report",
    "/dev/termination-log",
  ]);
  assert.ok(prepare.args.includes("--modelfile"));
  assert.deepEqual(server.args, ["serve", "--model", "chat:latest"]);
  const app = resolved({ server: { draftModel: "hf.co/acme/draft-GGUF:Q4_K_M" } });
  assert.equal(app.modelfile, `FROM ${MODEL}\nPARAMETER draft_model hf.co/acme/draft-GGUF:Q4_K_M\n`);
  assert.match(
    resolved({ modelfile: "SYSTEM hi", server: { draftModel: "x" } }).modelfile!,
    /^FROM .*\nSYSTEM hi\nPARAMETER draft_model x:latest\n$/,
  );
});

test("the server serves the resolved model name", () => {
  assert.deepEqual(render(resolved()).server.args, ["serve", "--model", MODEL]);
  assert.deepEqual(render(resolved({ model: "smollm2" })).server.args, ["serve", "--model", "smollm2:latest"]);
});

test("the named volume is the claim mounted at /models in both containers", () => {
  const { pod, server, prepare } = render(resolved({ modelVolume: { name: "shared" } }));
  assert.deepEqual(pod.volumes[0], { name: "models", persistentVolumeClaim: { claimName: "shared" } });
  assert.ok(server.volumeMounts.some((m) => m.name === "models" && m.mountPath === "/models"));
  assert.ok(prepare.volumeMounts.some((m) => m.name === "models" && m.mountPath === "/models"));
});

test("the server environment carries the spec's server settings", () => {
  const { serverEnv } = render(
    resolved({ server: { keepAlive: "10m", parallel: 8, contextLength: 8192, promptCacheRam: "2Gi" } }),
    config({ serverPort: 9000 }),
  );
  assert.equal(serverEnv.GANTRY_PROMPT_CACHE_RAM, "2Gi");
  assert.equal(serverEnv.GANTRY_KEEP_ALIVE, "10m");
  assert.equal(serverEnv.GANTRY_NUM_PARALLEL, "8");
  assert.equal(serverEnv.GANTRY_CONTEXT_LENGTH, "8192");
  assert.equal(serverEnv.GANTRY_HOST, "0.0.0.0:9000");
  assert.equal(serverEnv.GANTRY_MODELS, "/models");
  assert.equal(serverEnv.GANTRY_ALLOW_REMOTE_IMAGES, "false", "pods fetch no remote image URLs");
  const defaults = render(resolved()).serverEnv;
  assert.deepEqual(
    [defaults.GANTRY_KEEP_ALIVE, defaults.GANTRY_NUM_PARALLEL, defaults.GANTRY_CONTEXT_LENGTH, defaults.GANTRY_HOST],
    ["-1", "4", undefined, "0.0.0.0:11434"],
    "no context length: the server sizes it by the pod's free memory",
  );
  assert.equal(defaults.GANTRY_PROMPT_CACHE_RAM, undefined, "unset: the server's default (auto)");
});

test("the user's environment overrides the operator's variable of the same name and is kept in order", () => {
  const env = [
    { name: "GANTRY_NUM_PARALLEL", value: "2" },
    { name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } },
    { name: "A_LAST", value: "x" },
  ];
  const { server } = render(resolved({ env }));
  const names = server.env.map((e) => e.name);
  assert.equal(names.filter((n) => n === "GANTRY_NUM_PARALLEL").length, 1);
  assert.equal(server.env.find((e) => e.name === "GANTRY_NUM_PARALLEL")?.value, "2");
  assert.deepEqual(
    server.env.find((e) => e.name === "HF_TOKEN"),
    env[1],
  );
  assert.deepEqual(names.slice(-3), ["GANTRY_NUM_PARALLEL", "HF_TOKEN", "A_LAST"]);
});

test("the server lists and serves only the app's model (GANTRY_ONLY_MODELS), whatever the user's environment says", () => {
  const app = resolved({ env: [{ name: "GANTRY_ONLY_MODELS", value: "" }] });
  const { server, serverEnv } = render(app);
  assert.equal(serverEnv.GANTRY_ONLY_MODELS, app.servedModel);
  assert.equal(server.env.filter((e) => e.name === "GANTRY_ONLY_MODELS").length, 1);
});

test("the app's name selects its model too (GANTRY_MODEL_ALIASES), whatever the user's environment says", () => {
  const app = resolved({ env: [{ name: "GANTRY_MODEL_ALIASES", value: "x=y" }] });
  const { server, serverEnv } = render(app);
  assert.equal(serverEnv.GANTRY_MODEL_ALIASES, `${app.name}=${app.servedModel}`);
  assert.equal(server.env.filter((e) => e.name === "GANTRY_MODEL_ALIASES").length, 1);
});

test("prepare gets the models path, the hub URL and the user's environment (for private repos)", () => {
  const { prepareEnv, prepare } = render(
    resolved({
      env: [
        { name: "HF_TOKEN", value: "t" },
        { name: "GANTRY_MODELS", value: "/elsewhere" },
      ],
    }),
    config({ hubUrl: "http://hub.local" }),
  );
  assert.equal(prepareEnv.GANTRY_MODELS, "/models", "the volume path cannot be moved");
  assert.equal(prepareEnv.GANTRY_HUB_URL, "http://hub.local");
  assert.equal(prepareEnv.HF_TOKEN, "t");
  assert.equal(prepare.env.filter((e) => e.name === "GANTRY_MODELS").length, 1);
  assert.equal(render(resolved()).prepareEnv.GANTRY_HUB_URL, undefined, "no hub URL configured");
});

test("no container has two environment variables of the same name (server-side apply rejects duplicate list-map keys)", () => {
  const env = [
    { name: "GANTRY_HUB_URL", value: "http://mirror.local" },
    { name: "GANTRY_HOST", value: "0.0.0.0:1" },
    { name: "GANTRY_GPU", value: "vulkan" },
  ];
  const { pod } = render(gpuApp({ env }), config({ hubUrl: "http://hub.local" }));
  for (const c of [...pod.initContainers, ...pod.containers]) {
    const names = c.env.map((e) => e.name);
    assert.deepEqual(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      `${c.name} env has duplicates: ${names.join(", ")}`,
    );
  }
});

test("readiness and startup probes check /health on the http port", () => {
  const { server } = render(resolved(), config({ serverPort: 9000 }));
  assert.deepEqual(server.ports, [{ name: "http", containerPort: 9000, protocol: "TCP" }]);
  for (const probe of [server.readinessProbe, server.startupProbe]) {
    assert.deepEqual(probe?.httpGet, { path: "/health", port: "http" });
  }
  // The startup probe allows big models half an hour to load, and a loaded one is seen within a second (scale from
  // zero waits on it); readiness is asked every 2 s.
  assert.ok(server.startupProbe!.periodSeconds * server.startupProbe!.failureThreshold >= 1800);
  assert.equal(server.startupProbe!.periodSeconds, 1);
  assert.ok(server.readinessProbe!.periodSeconds <= 2);
  assert.ok(!("livenessProbe" in server), "no liveness probe kills a loading model");
});

test("pods run as non-root without privileges or a service account token", () => {
  const { pod } = render(resolved());
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.securityContext.runAsUser, RUN_AS_USER);
  assert.notEqual(RUN_AS_USER, 0);
  assert.equal(pod.securityContext.fsGroup, RUN_AS_USER, "the volume is writable by the user");
  assert.equal(pod.automountServiceAccountToken, false);
  for (const c of [...pod.initContainers, ...pod.containers]) {
    assert.equal(c.securityContext.allowPrivilegeEscalation, false, c.name);
    assert.deepEqual(c.securityContext.capabilities.drop, ["ALL"], c.name);
  }
});

test("the rollout strategy follows the volume's access mode", () => {
  // accessMode → strategy
  const cases: [string, unknown][] = [
    ["ReadWriteOnce", { type: "Recreate" }],
    ["ReadWriteOncePod", { type: "Recreate" }],
    ["ReadWriteMany", { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } }],
  ];
  for (const [accessMode, strategy] of cases) {
    assert.deepEqual(
      render(resolved({ modelVolume: { accessMode: accessMode as "ReadWriteOnce" } })).d.spec.strategy,
      strategy,
      accessMode,
    );
  }
});

test("spec.strategy overrides the access mode's default: rolling surges one pod, recreate replaces", () => {
  const rolling = { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
  assert.deepEqual(render(resolved({ strategy: "rolling" })).d.spec.strategy, rolling, "ReadWriteOnce volume");
  assert.deepEqual(
    render(resolved({ strategy: "recreate", modelVolume: { accessMode: "ReadWriteMany" } })).d.spec.strategy,
    { type: "Recreate" },
  );
});

test("config pod labels and annotations land on the pod template, not on the selector", () => {
  const cfg = config({
    podLabels: { team: "ml", "gantry.dev/modelapp": "spoofed" },
    podAnnotations: { "prometheus.io/scrape": "true" },
  });
  const { d } = render(resolved({}, cfg), cfg);
  assert.equal(d.spec.template.metadata.labels.team, "ml");
  assert.equal(d.spec.template.metadata.labels["gantry.dev/modelapp"], "chat", "the app's own labels win");
  assert.equal((d.spec.template.metadata.annotations as Record<string, string>)["prometheus.io/scrape"], "true");
  assert.ok(!("team" in d.spec.selector.matchLabels));
  assert.ok(!("team" in d.metadata.labels));
});

test("the spec hash is stable for equal input and changes with the pod", () => {
  const base = render(resolved()).hash;
  assert.match(base, /^[0-9a-f]{16}$/);
  assert.equal(render(resolved()).hash, base, "equal input");
  // changes → must move the hash
  const changes: [string, ResolvedApp, OperatorConfig?][] = [
    ["model", resolved({ model: "hf.co/org/other:Q4_K_M" })],
    ["env", resolved({ env: [{ name: "X", value: "1" }] })],
    ["env value", resolved({ env: [{ name: "X", value: "2" }] })],
    ["modelfile", resolved({ modelfile: "SYSTEM hi" })],
    // The Modelfile's text lives in a ConfigMap the prepare step reads once: a new text needs new pods.
    ["modelfile text", resolved({ modelfile: "SYSTEM bye" })],
    ["context length", resolved({ server: { contextLength: 8192 } })],
    ["profile", resolved({ resources: { profile: "nvidia-gpu" } })],
    ["memory", resolved({ resources: { memory: "8Gi" } })],
    ["image", resolved({}, config({ image: "other:1" })), config({ image: "other:1" })],
    ["pod annotation", resolved(), config({ podAnnotations: { a: "b" } })],
  ];
  const seen = new Set([base]);
  for (const [what, app, cfg] of changes) {
    const h = render(app, cfg).hash;
    assert.ok(!seen.has(h), `${what} did not change the hash`);
    seen.add(h);
  }
});

test("the spec hash ignores the replica count and auth (they do not restart pods)", () => {
  const base = render(resolved({ scaling: { minReplicas: 0, maxReplicas: 5 } })).hash;
  assert.equal(render(resolved({ scaling: { minReplicas: 0, maxReplicas: 5 }, replicas: 3 })).hash, base);
  assert.equal(render(resolved({ scaling: { minReplicas: 2, maxReplicas: 5 } })).hash, base);
  assert.equal(render(resolved({ scaling: { minReplicas: 0, maxReplicas: 5 }, auth: "public" })).hash, base);
});

test("rendering is deterministic: same input, same bytes", () => {
  const spec = {
    resources: { profile: "nvidia-gpu", memory: "8Gi" },
    modelfile: "SYSTEM hi",
    env: [
      { name: "B", value: "1" },
      { name: "A", value: "2" },
    ],
    nodeSelector: { z: "1", a: "2" },
  };
  const cfg = config({ podLabels: { y: "1", x: "2" }, hubUrl: "http://hub" });
  assert.equal(
    JSON.stringify(renderDeployment(resolved(spec, cfg), cfg)),
    JSON.stringify(renderDeployment(resolved(spec, cfg), cfg)),
  );
  // Map order of the input does not leak into the output.
  const reordered = { ...spec, nodeSelector: { a: "2", z: "1" } };
  assert.equal(
    JSON.stringify(renderDeployment(resolved(spec, cfg), cfg)),
    JSON.stringify(renderDeployment(resolved(reordered, cfg), cfg)),
  );
});
