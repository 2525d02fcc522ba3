// The app's Deployment: `gantry serve` pods with the model volume. Pure and deterministic (same input, same bytes).
//
// Pod: an init container `prepare` runs `gantry prepare <model>`: it pulls a hub model into the volume (resumable, so a
// restarted pod continues a cut download), or checks that a named model is there, applies the Modelfile overrides,
// and writes a JSON report to its termination message ({model, digest} or {error, code}) for the operator's status.
// The `server` container runs `gantry serve --model <model>` with the model kept loaded; readiness follows /health
// (503 while the model loads), and a startup probe (asked every second) allows half an hour for big models to load.
import { PREPARE_CONTAINER } from "../api/v1alpha1/prepare.ts";
import type { RenderConfig } from "./config.ts";
import { appLabels, controllerRef, selectorLabels, SPEC_HASH_ANNOTATION } from "./labels.ts";
import { modelfileConfigMapName } from "./modelfile-configmap.ts";
import { quantityString, quantityValue } from "./quantity.ts";
import { stableHash } from "./hash.ts";
import type { ResolvedApp } from "./resolve.ts";

export const MODELS_PATH = "/models";
export const MODELFILE_DIR = "/etc/gantry";
export { PREPARE_CONTAINER };
export const SERVER_CONTAINER = "server";
/** The non-root user of the image (distroless "nonroot"). */
export const RUN_AS_USER = 65532;

type EnvVar = { name: string; value?: string; valueFrom?: unknown };

/** The operator's variables (sorted) followed by the user's; a user variable replaces the operator's of that name. */
function mergeEnv(own: Record<string, string>, user: readonly EnvVar[]): EnvVar[] {
  const userNames = new Set(user.map((e) => e.name));
  return [
    ...Object.keys(own)
      .sort()
      .filter((name) => !userNames.has(name))
      .map((name) => ({ name, value: own[name]! })),
    ...user.map((e) => ({ ...e })),
  ];
}

/**
 * The server's GANTRY_GPU: the profile's GPU backend (CUDA unless it names another) when the pod has GPUs, else off
 * (the CPU build, no GPU probing).
 */
export function gpuSetting(app: Pick<ResolvedApp, "gpus" | "profile">): "cuda" | "vulkan" | "metal" | "off" {
  return app.gpus > 0 && app.profile.gpuResource ? (app.profile.gpuBackend ?? "cuda") : "off";
}

function serverEnv(app: ResolvedApp, config: Pick<RenderConfig, "serverPort">): EnvVar[] {
  const { server } = app.spec;
  const cpu = app.spec.resources.cpu ?? app.profile.cpu;
  const cpus = cpu === undefined ? undefined : quantityValue(cpu);
  const own: Record<string, string> = {
    ...app.profile.env,
    GANTRY_HOST: `0.0.0.0:${config.serverPort}`,
    GANTRY_MODELS: MODELS_PATH,
    GANTRY_KEEP_ALIVE: server.keepAlive,
    GANTRY_NUM_PARALLEL: String(server.parallel),
    ...(server.contextLength !== undefined ? { GANTRY_CONTEXT_LENGTH: String(server.contextLength) } : {}),
    GANTRY_KV_CACHE_TYPE: server.kvCacheType,
    GANTRY_FLASH_ATTENTION: server.flashAttention,
    ...(server.promptCacheRam !== undefined ? { GANTRY_PROMPT_CACHE_RAM: String(server.promptCacheRam) } : {}),
    GANTRY_GPU: gpuSetting(app),
    // The model volume may hold other apps' models: the pod lists and serves its app's model only.
    GANTRY_ONLY_MODELS: app.servedModel,
    // Requests may name the app instead of its model, as fal's users address an app by its name.
    GANTRY_MODEL_ALIASES: `${app.name}=${app.servedModel}`,
    // A pod behind the gateway fetches no URLs on a caller's behalf (image_url parts must be data URLs); an app may
    // turn it on through spec.env.
    GANTRY_ALLOW_REMOTE_IMAGES: "false",
    // Inference threads follow the CPU request, so replicas never oversubscribe their share of a node.
    ...(cpus !== undefined && cpus >= 1 ? { GANTRY_THREADS: String(Math.floor(cpus)) } : {}),
  };
  return mergeEnv(
    own,
    (app.spec.env ?? []).filter((e) => e.name !== "GANTRY_ONLY_MODELS" && e.name !== "GANTRY_MODEL_ALIASES"),
  );
}

function resources(app: ResolvedApp) {
  const cpu = app.spec.resources.cpu ?? app.profile.cpu;
  const memory = app.spec.resources.memory ?? app.profile.memory;
  const requests: Record<string, string> = {},
    limits: Record<string, string> = {};
  if (cpu !== undefined) requests.cpu = quantityString(cpu);
  if (memory !== undefined) requests.memory = limits.memory = quantityString(memory);
  if (app.gpus > 0 && app.profile.gpuResource)
    requests[app.profile.gpuResource] = limits[app.profile.gpuResource] = String(app.gpus);
  return { ...(Object.keys(requests).length ? { requests } : {}), ...(Object.keys(limits).length ? { limits } : {}) };
}

const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };

/** The prepare step of the app's model, or (`draft`) of its draft model (spec.server.draftModel), which goes first. */
function prepareContainer(
  app: ResolvedApp,
  image: string,
  config: Pick<RenderConfig, "hubUrl" | "imagePullPolicy">,
  draft = false,
) {
  const args = ["prepare", draft ? app.spec.server.draftModel! : app.spec.model];
  if (app.modelfile && !draft) args.push("--modelfile", `${MODELFILE_DIR}/Modelfile`, "--as", app.servedModel);
  args.push("--report", "/dev/termination-log");
  // The user's environment (HF_TOKEN for private repositories, proxies, another hub) applies to the pull too; the
  // model volume's mount point does not move.
  const env = mergeEnv(
    { GANTRY_MODELS: MODELS_PATH, ...(config.hubUrl ? { GANTRY_HUB_URL: config.hubUrl } : {}) },
    (app.spec.env ?? []).filter((e) => e.name !== "GANTRY_MODELS"),
  );
  return {
    name: draft ? `${PREPARE_CONTAINER}-draft` : PREPARE_CONTAINER,
    image,
    ...(config.imagePullPolicy ? { imagePullPolicy: config.imagePullPolicy } : {}),
    args,
    env,
    volumeMounts: [
      { name: "models", mountPath: MODELS_PATH },
      ...(app.modelfile && !draft ? [{ name: "modelfile", mountPath: MODELFILE_DIR, readOnly: true }] : []),
    ],
    terminationMessagePolicy: "FallbackToLogsOnError",
    securityContext: containerSecurity,
  };
}

function serverContainer(
  app: ResolvedApp,
  image: string,
  config: Pick<RenderConfig, "serverPort" | "imagePullPolicy">,
) {
  const probe = (periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path: "/health", port: "http" },
    periodSeconds,
    timeoutSeconds: 5,
    failureThreshold,
  });
  return {
    name: SERVER_CONTAINER,
    image,
    ...(config.imagePullPolicy ? { imagePullPolicy: config.imagePullPolicy } : {}),
    args: ["serve", "--model", app.servedModel],
    env: serverEnv(app, config),
    ports: [{ name: "http", containerPort: config.serverPort, protocol: "TCP" }],
    // A pod is Ready within a second or two of its model loading (a scale from zero waits on it; the gateway's own
    // health check of a starting pod usually sends held requests on sooner): /health is cheap to ask often.
    readinessProbe: probe(2, 3),
    startupProbe: probe(1, 1800),
    resources: resources(app),
    volumeMounts: [{ name: "models", mountPath: MODELS_PATH }],
    terminationMessagePolicy: "FallbackToLogsOnError",
    securityContext: containerSecurity,
  };
}

/** The pod of an app: the prepare init container and the server (the model cache Job runs the first alone). */
export function modelPodSpec(app: ResolvedApp, config: RenderConfig) {
  const image = app.spec.image ?? app.profile.image ?? config.image;
  const nodeSelector = { ...app.profile.nodeSelector, ...app.spec.nodeSelector };
  const tolerations = [...app.profile.tolerations, ...(app.spec.tolerations ?? [])];
  return {
    ...(app.profile.runtimeClassName ? { runtimeClassName: app.profile.runtimeClassName } : {}),
    ...(Object.keys(nodeSelector).length
      ? { nodeSelector: Object.fromEntries(Object.entries(nodeSelector).sort(([a], [b]) => (a < b ? -1 : 1))) }
      : {}),
    ...(tolerations.length ? { tolerations } : {}),
    enableServiceLinks: false,
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 30,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUN_AS_USER,
      runAsGroup: RUN_AS_USER,
      fsGroup: RUN_AS_USER,
      seccompProfile: { type: "RuntimeDefault" },
    },
    initContainers: [
      ...(app.draft ? [prepareContainer(app, image, config, true)] : []),
      prepareContainer(app, image, config),
    ],
    containers: [serverContainer(app, image, config)],
    volumes: [
      { name: "models", persistentVolumeClaim: { claimName: app.spec.modelVolume.name } },
      ...(app.modelfile ? [{ name: "modelfile", configMap: { name: modelfileConfigMapName(app) } }] : []),
    ],
  };
}

export function renderDeployment(app: ResolvedApp, config: RenderConfig) {
  const spec = modelPodSpec(app, config);
  const podLabels = { ...config.podLabels, ...appLabels(app, "model-server") };
  // The Modelfile's text is in a ConfigMap that the prepare step reads once: a changed text must roll the pods too.
  const specHash = stableHash({
    labels: podLabels,
    annotations: config.podAnnotations,
    spec,
    ...(app.modelfile ? { modelfile: app.modelfile } : {}),
  });
  // A volume only one node can mount cannot hold an old and a new pod on different nodes: replace, don't surge (unless
  // the app asks for rolling updates, for a single-node cluster for example).
  const singleAttach =
    app.spec.modelVolume.accessMode === "ReadWriteOnce" || app.spec.modelVolume.accessMode === "ReadWriteOncePod";
  const strategy = app.spec.strategy ?? (singleAttach ? "recreate" : "rolling");
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: app.name,
      namespace: app.namespace,
      labels: appLabels(app, "model-server"),
      ownerReferences: [controllerRef(app)],
    },
    spec: {
      replicas: app.replicas,
      selector: { matchLabels: selectorLabels(app) },
      strategy:
        strategy === "recreate"
          ? { type: "Recreate" }
          : { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: podLabels, annotations: { ...config.podAnnotations, [SPEC_HASH_ANNOTATION]: specHash } },
        spec,
      },
    },
  };
}
