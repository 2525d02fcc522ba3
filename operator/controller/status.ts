// A ModelApp's status, computed from what the cluster shows: its Deployment, its pods and its model cache Job's pod.
// Pure (the clock is passed in), deterministic (no durations or timestamps in messages), so an unchanged world gives an
// equal status and no write.
import type { V1ContainerStatus, V1Deployment, V1Pod } from "@kubernetes/client-node";
import { CONDITION, REASON, findCondition, setCondition, type ConditionInput } from "../api/v1alpha1/conditions.ts";
import type { ModelApp, ModelAppStatus } from "../api/v1alpha1/modelapp.ts";
import { PREPARE_CONTAINER, SERVER_CONTAINER } from "../render/deployment.ts";
import { MODEL_CACHE_COMPONENT } from "../render/model-cache-job.ts";
import { selectorString } from "../render/labels.ts";
import type { ResolvedApp } from "../render/resolve.ts";

/** The model cache Job of the app's current spec, and where it is. */
export interface CacheJob {
  name: string;
  state: "running" | "complete" | "failed";
}

export interface Observed {
  deployment?: V1Deployment;
  /** The app's pods: its servers and its current model cache Job's. */
  pods: readonly V1Pod[];
  /** The app's current model cache Job. */
  cacheJob?: CacheJob;
  /** An object the app needs exists and belongs to someone else: the operator never adopts it. */
  conflict?: string;
}

/** The prepare step's JSON report (its termination message). */
type PrepareReport = { model?: string; digest?: string; error?: string; code?: string };

function parseReport(message: string | undefined): PrepareReport | undefined {
  if (!message) return undefined;
  try {
    const r = JSON.parse(message) as unknown;
    if (r && typeof r === "object") return r as PrepareReport;
  } catch {
    /* a log tail, not a report */
  }
  return { error: message.trim().split("\n").filter(Boolean).at(-1) ?? message.trim() };
}

interface ModelObservation {
  cached?: { digest?: string };
  failed?: { reason: typeof REASON.ModelNotFound | typeof REASON.PullFailed; message: string };
  pulling?: boolean;
  /** Why the model cache Job's pod does not run (unschedulable, its image cannot be pulled...). */
  stuck?: string;
}

export const isCachePod = (pod: V1Pod): boolean =>
  pod.metadata?.labels?.["app.kubernetes.io/component"] === MODEL_CACHE_COMPONENT;

const IMAGE_PULL_REASONS = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);

/**
 * A container of the pod (init containers first) whose image the node cannot pull, said with the image's name and
 * what to do: a chart installed without a reachable image shows here first (docs/kubernetes.md, "The image").
 */
function imagePullFailure(pod: V1Pod): string | undefined {
  const all = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const c = all.find((s) => IMAGE_PULL_REASONS.has(s.state?.waiting?.reason ?? ""));
  if (!c) return undefined;
  const { reason, message } = c.state!.waiting!;
  return (
    `${reason}: the node cannot pull image "${c.image}"${message ? ` (${message})` : ""}; ` +
    "push it to a registry the nodes reach or load it into the cluster, and set the chart's image.repository"
  );
}

/** Why a pod that should run does not: unschedulable, or its container waits on an error; else undefined. */
function podStuck(pod: V1Pod, container: V1ContainerStatus | undefined): string | undefined {
  const unscheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
  if (unscheduled) return `its pod cannot be scheduled: ${unscheduled.message ?? unscheduled.reason ?? "no node fits"}`;
  const image = imagePullFailure(pod);
  if (image) return `its pod waits: ${image}`;
  const waiting = container?.state?.waiting;
  if (waiting?.reason && waiting.reason !== "ContainerCreating" && waiting.reason !== "PodInitializing")
    return `its pod waits: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`;
  return undefined;
}

/**
 * What the prepare steps say: the servers' init containers and the current model cache Job's container. A failed
 * attempt of a Job that runs on is a retry (the Job tries again), unless the model does not exist (the Job stops).
 */
function observeModel(pods: readonly V1Pod[], job: CacheJob | undefined): ModelObservation {
  const seen: ModelObservation = {};
  for (const pod of pods) {
    const cache = isCachePod(pod);
    const init = (cache ? pod.status?.containerStatuses : pod.status?.initContainerStatuses)?.find(
      (c) => c.name === PREPARE_CONTAINER,
    );
    const done = init?.state?.terminated;
    if (done?.exitCode === 0) {
      seen.cached = { ...(parseReport(done.message)?.digest ? { digest: parseReport(done.message)!.digest } : {}) };
      continue;
    }
    const server = pod.status?.containerStatuses?.find((c) => c.name === SERVER_CONTAINER);
    if (server?.ready) {
      seen.cached ??= {};
      continue;
    }
    const failure = done ?? init?.lastState?.terminated;
    if (failure && failure.exitCode !== 0) {
      const report = parseReport(failure.message);
      const notFound = report?.code === "MODEL_NOT_FOUND";
      if (cache && job?.state === "running" && !notFound) {
        seen.pulling = true;
        continue;
      }
      const message = report?.error ?? `the model could not be prepared (exit code ${failure.exitCode})`;
      seen.failed = { reason: notFound ? REASON.ModelNotFound : REASON.PullFailed, message };
    } else if (init?.state?.running) {
      seen.pulling = true;
    } else if (cache) {
      seen.stuck ??= podStuck(pod, init);
    }
  }
  // The Job says it succeeded, though its pod is gone (deleted, its node removed) before it was seen.
  if (!seen.cached && !seen.failed && job?.state === "complete") seen.cached = {};
  return seen;
}

function scheduling(app: ResolvedApp, pods: readonly V1Pod[]): ConditionInput {
  if (pods.length === 0) {
    return app.replicas === 0
      ? {
          type: CONDITION.Scheduled,
          status: "Unknown",
          reason: REASON.NoReplicas,
          message: "scaled to zero: no pods to schedule",
        }
      : { type: CONDITION.Scheduled, status: "Unknown", reason: REASON.Pending, message: "waiting for pods" };
  }
  const stuck = pods
    .map((p) => p.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False"))
    .find(Boolean);
  if (stuck) {
    const gpu = app.profile.gpuResource;
    const insufficientGpu = gpu !== undefined && (stuck.message ?? "").includes(`Insufficient ${gpu}`);
    return {
      type: CONDITION.Scheduled,
      status: "False",
      reason: insufficientGpu ? REASON.InsufficientGPU : REASON.Unschedulable,
      message: insufficientGpu
        ? `no node has ${app.gpus} free ${gpu} for a replica: ${stuck.message}`
        : (stuck.message ?? "pod cannot be scheduled"),
    };
  }
  const nodes = [...new Set(pods.map((p) => p.spec?.nodeName).filter((n): n is string => Boolean(n)))].sort();
  if (nodes.length === 0)
    return {
      type: CONDITION.Scheduled,
      status: "Unknown",
      reason: REASON.Pending,
      message: "waiting for the scheduler",
    };
  return {
    type: CONDITION.Scheduled,
    status: "True",
    reason: REASON.Scheduled,
    message: `pods run on ${nodes.join(", ")}`,
  };
}

/**
 * The last line of a container's log tail, as the reason it ended; undefined for a JSON log record that is not an
 * error (the server was killed without a word, e.g. kill -9 or out of memory: its last request's log line says nothing
 * of why, and went to API callers as the reason the app "cannot start").
 */
function lastWords(tail: string | undefined): string | undefined {
  const last = tail?.trim().split("\n").filter(Boolean).at(-1);
  if (!last?.startsWith("{")) return last;
  try {
    const r = JSON.parse(last) as { level?: unknown; msg?: unknown; err?: { message?: unknown } | string };
    if (r.level !== "error" && r.level !== "fatal") return undefined;
    const err = typeof r.err === "string" ? r.err : r.err?.message;
    return [r.msg, err].filter((x) => typeof x === "string" && x).join(": ") || last;
  } catch {
    return last;
  }
}

/** How a container ended, in words: its exit code, with the signal that killed it or the kubelet's reason. */
function exitWords(code: number, reason?: string): string {
  const signal =
    code > 128
      ? ({ 9: "SIGKILL", 15: "SIGTERM", 6: "SIGABRT", 11: "SIGSEGV" } as Record<number, string>)[code - 128]
      : undefined;
  const why = [reason && reason !== "Error" ? reason : undefined, signal].filter(Boolean).join(", ");
  return `the server exited with code ${code}${why ? ` (${why})` : ""}`;
}

function serverFailure(pods: readonly V1Pod[]): string | undefined {
  for (const pod of pods) {
    const image = imagePullFailure(pod);
    if (image) return image;
    const server = pod.status?.containerStatuses?.find((c) => c.name === SERVER_CONTAINER);
    const waiting = server?.state?.waiting;
    if (waiting?.reason === "CrashLoopBackOff" || waiting?.reason === "CreateContainerConfigError") {
      const ended = server?.lastState?.terminated;
      const last = lastWords(ended?.message) ?? (ended ? exitWords(ended.exitCode, ended.reason) : undefined);
      return `${waiting.reason}${last ? `: ${last}` : waiting.message ? `: ${waiting.message}` : ""}`;
    }
  }
  return undefined;
}

const readyCondition = (
  status: ConditionInput["status"],
  reason: ConditionInput["reason"],
  message: string,
): ConditionInput => ({ type: CONDITION.Ready, status, reason, message });

export interface StatusInput {
  app: ModelApp;
  /** The resolved app, or the reason its spec cannot work. */
  resolved: ResolvedApp | { invalid: string };
  observed: Observed;
  gatewayUrl: string;
  now: Date;
}

export function computeStatus({ app, resolved, observed, gatewayUrl, now }: StatusInput): ModelAppStatus {
  const prev = app.status ?? {};
  const generation = app.metadata.generation;
  const name = app.metadata.name,
    namespace = app.metadata.namespace ?? "default";
  const base: ModelAppStatus = {
    observedGeneration: generation,
    replicas: observed.deployment?.status?.replicas ?? 0,
    readyReplicas: observed.deployment?.status?.readyReplicas ?? 0,
    selector: selectorString({ name }),
    url: `${gatewayUrl.replace(/\/+$/, "")}/${namespace}/${name}`,
  };
  let conditions = prev.conditions ?? [];
  const set = (c: ConditionInput) => {
    conditions = setCondition(conditions, c, generation, now);
  };

  if ("invalid" in resolved) {
    set(readyCondition("False", REASON.InvalidSpec, resolved.invalid));
    set({ type: CONDITION.ModelCached, status: "Unknown", reason: REASON.InvalidSpec, message: "the spec is invalid" });
    set({ type: CONDITION.Scheduled, status: "Unknown", reason: REASON.InvalidSpec, message: "the spec is invalid" });
    // What the volume holds does not change with a bad spec: keep the model's digest for when the spec is fixed.
    return {
      ...base,
      ...(prev.model ? { model: prev.model } : {}),
      ...(prev.modelRef ? { modelRef: prev.modelRef } : {}),
      conditions,
    };
  }

  // Model: what pods show now; else what was known about the same model (pods come and go, the volume stays).
  const model = observeModel(observed.pods, observed.cacheJob);
  const sameModel = prev.modelRef === resolved.spec.model;
  const volume = resolved.spec.modelVolume.name;
  let digest = sameModel ? prev.model : undefined;
  if (model.cached) {
    digest = model.cached.digest ?? digest;
    set({
      type: CONDITION.ModelCached,
      status: "True",
      reason: REASON.Cached,
      message: `${resolved.spec.model} is in volume ${volume}`,
    });
  } else if (model.failed) {
    set({ type: CONDITION.ModelCached, status: "False", reason: model.failed.reason, message: model.failed.message });
  } else if (model.pulling || observed.cacheJob?.state === "running") {
    const job = observed.cacheJob?.state === "running" ? observed.cacheJob.name : undefined;
    set({
      type: CONDITION.ModelCached,
      status: "False",
      reason: REASON.Pulling,
      message: model.stuck
        ? `Job ${job} cannot pull ${resolved.spec.model} yet: ${model.stuck}`
        : `pulling ${resolved.spec.model} into volume ${volume}${job ? ` (Job ${job})` : ""}`,
    });
  } else {
    // No pod says anything now (scaled to zero): what was known about the same model still holds.
    const known = sameModel ? findCondition(conditions, CONDITION.ModelCached) : undefined;
    if (known && known.reason !== REASON.InvalidSpec)
      set({ ...known, type: CONDITION.ModelCached, reason: known.reason as ConditionInput["reason"] });
    else
      set({
        type: CONDITION.ModelCached,
        status: "Unknown",
        reason: REASON.Pending,
        message:
          resolved.replicas === 0
            ? `${resolved.spec.model} is to be pulled into volume ${volume} by a Job`
            : `${resolved.spec.model} is pulled when a replica starts`,
      });
  }
  const cachedCond = findCondition(conditions, CONDITION.ModelCached)!;

  const servers = observed.pods.filter((p) => !isCachePod(p));
  const sched = scheduling(resolved, servers);
  set(sched);

  const ready = base.readyReplicas ?? 0;
  const failure = serverFailure(servers);
  if (observed.conflict) set(readyCondition("False", REASON.ResourceExists, observed.conflict));
  else if (ready > 0) set(readyCondition("True", REASON.Serving, `${ready} of ${resolved.replicas} replicas ready`));
  else if (cachedCond.status === "False" && cachedCond.reason !== REASON.Pulling)
    set(readyCondition("False", cachedCond.reason as ConditionInput["reason"], cachedCond.message));
  else if (resolved.replicas === 0)
    // Ready at zero once the model is in the volume: a deploy that waits for Ready learns of a model that cannot be
    // pulled then, not at the first request.
    set(
      cachedCond.status === "True"
        ? readyCondition(
            "True",
            REASON.ScaledToZero,
            "scaled to zero: the next request through the gateway starts a replica",
          )
        : readyCondition("False", cachedCond.reason as ConditionInput["reason"], cachedCond.message),
    );
  else if (sched.status === "False") set(readyCondition("False", sched.reason, sched.message));
  else if (cachedCond.reason === REASON.Pulling) set(readyCondition("False", REASON.Pulling, cachedCond.message));
  else if (failure) set(readyCondition("False", REASON.ServerFailed, failure));
  else set(readyCondition("False", REASON.Starting, "waiting for a replica to load the model"));

  return { ...base, ...(digest ? { model: digest } : {}), modelRef: resolved.spec.model, conditions };
}
