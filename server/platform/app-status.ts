// What the platform commands say about an app, computed from the ModelApp alone: its URL, its state in one word (the
// Ready condition's reason), and whether a deploy has finished or failed. Pure.
import { queueUrlOf } from "../common/queue-url.ts";
import type { V1Deployment } from "@kubernetes/client-node";
import { CONDITION, REASON } from "../../operator/api/v1alpha1/conditions.ts";
import { parseModelAppSpec, type Condition, type ModelApp } from "../../operator/api/v1alpha1/modelapp.ts";
import { servedModelOf } from "../../operator/api/v1alpha1/spec-checks.ts";

/** Ready=False reasons that no amount of waiting fixes: a deploy stops waiting and fails with the message. */
export const FAILURE_REASONS: ReadonlySet<string> = new Set([
  REASON.InvalidSpec,
  REASON.InsufficientGPU,
  REASON.Unschedulable,
  REASON.ModelNotFound,
  REASON.PullFailed,
  REASON.ServerFailed,
  REASON.ResourceExists,
]);

export const condition = (app: ModelApp, type: string): Condition | undefined =>
  app.status?.conditions?.find((c) => c.type === type);

/** Whether the operator has seen this generation of the app (its conditions describe this spec). */
export const observed = (app: ModelApp, generation = app.metadata.generation ?? 0): boolean =>
  (app.status?.observedGeneration ?? -1) >= generation;

/** {baseUrl}/<org>/<app> with a base URL (flag or config file), else the URL the operator reported. */
export function appUrl(app: ModelApp, baseUrl: string | undefined): string | undefined {
  if (baseUrl) return `${baseUrl.replace(/\/+$/, "")}/${app.metadata.namespace}/${app.metadata.name}`;
  return app.status?.url;
}

/** The app's queue URL, beside its URL (appUrl). */
export function queueUrlFor(app: ModelApp, baseUrl: string | undefined): string | undefined {
  const url = appUrl(app, baseUrl);
  return url ? queueUrlOf(url, app.metadata.namespace ?? "", app.metadata.name ?? "") : undefined;
}

export interface AppSummary {
  org: string;
  app: string;
  model: string;
  /** The name requests send as `model` (the model, or <app>:latest with a modelfile); "" for an invalid spec. */
  servedModel: string;
  auth: string;
  url: string | null;
  /** fal's queue API for the app: POST {queueUrl}/<the app's path> (the gateway needs its queue.redisUrl set). */
  queueUrl: string | null;
  /** Ready, or the Ready condition's reason (Starting, Pulling, ModelNotFound…), or Pending before the operator. */
  state: string;
  ready: boolean;
  message: string;
  replicas: number;
  readyReplicas: number;
  minReplicas: number;
  maxReplicas: number;
  created: string | null;
}

/**
 * How this machine reaches an app whose URL is the gateway Service's cluster-internal address
 * (`http://gantry-gateway.gantry-system.svc/acme/chat`: no Ingress or gatewayUrl was set), or undefined for any
 * other URL: a port-forward to that Service and the --base-url that makes the printed URLs work from here.
 */
export function clusterInternalHint(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?$/.exec(u.hostname);
  if (!m) return undefined;
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return (
    `${u.host} is the gateway's address inside the cluster. From this machine:\n` +
    `  kubectl -n ${m[2]} port-forward svc/${m[1]} 8080:${port} &\n` +
    "  then add --base-url http://127.0.0.1:8080 (or set the chart's gateway.ingress or operator.config.gatewayUrl)"
  );
}

export function summarizeApp(app: ModelApp, baseUrl: string | undefined): AppSummary {
  const ready = observed(app) ? condition(app, CONDITION.Ready) : undefined;
  const spec = app.spec as Partial<ModelApp["spec"]>;
  const parsed = parseModelAppSpec(app.spec);
  const created = app.metadata.creationTimestamp;
  return {
    org: app.metadata.namespace ?? "default",
    app: app.metadata.name,
    model: spec.model ?? "",
    servedModel: parsed.ok ? (servedModelOf(app.metadata.name, parsed.spec) ?? "") : "",
    auth: spec.auth ?? "private",
    url: appUrl(app, baseUrl) ?? null,
    queueUrl: queueUrlFor(app, baseUrl) ?? null,
    state: !ready
      ? "Pending"
      : ready.status === "True"
        ? ready.reason === REASON.Serving
          ? "Ready"
          : ready.reason
        : ready.reason,
    ready: ready?.status === "True",
    message: ready?.message ?? "waiting for the operator",
    replicas: app.status?.replicas ?? 0,
    readyReplicas: app.status?.readyReplicas ?? 0,
    minReplicas: spec.scaling?.minReplicas ?? 0,
    maxReplicas: spec.scaling?.maxReplicas ?? 1,
    created: created ? new Date(created).toISOString() : null,
  };
}

export type DeployState =
  { phase: "waiting" } | { phase: "ready"; message: string } | { phase: "failed"; reason: string; message: string };

/** Where a deploy of `generation` stands, from the app's conditions (a rollout is checked separately). */
export function deployState(app: ModelApp, generation: number): DeployState {
  if (!observed(app, generation)) return { phase: "waiting" };
  const ready = condition(app, CONDITION.Ready);
  if (ready?.status === "True") return { phase: "ready", message: ready.message };
  if (ready && FAILURE_REASONS.has(ready.reason))
    return { phase: "failed", reason: ready.reason, message: ready.message };
  return { phase: "waiting" };
}

/** The lines a deploy prints when the app's conditions change: "Scheduled: pods run on cpu-node-0". */
export function conditionChanges(before: ModelApp | undefined, after: ModelApp, generation: number): string[] {
  if (!observed(after, generation)) return [];
  const lines: string[] = [];
  for (const type of [CONDITION.Scheduled, CONDITION.ModelCached, CONDITION.Ready]) {
    const now = condition(after, type);
    if (!now) continue;
    const was = before && observed(before, generation) ? condition(before, type) : undefined;
    if (was && was.status === now.status && was.reason === now.reason && was.message === now.message) continue;
    // Ready often repeats why another condition is not there yet (Pulling): said once is enough.
    if (type === CONDITION.Ready && now.status !== "True" && sameAsOther(after, now)) continue;
    lines.push(`${type}: ${now.status === "True" ? "" : `${now.reason}: `}${now.message}`);
  }
  return lines;
}

const sameAsOther = (app: ModelApp, ready: Condition): boolean =>
  [CONDITION.Scheduled, CONDITION.ModelCached].some((t) => {
    const c = condition(app, t);
    return c?.reason === ready.reason && c.message === ready.message;
  });

/**
 * What a Deployment's rollout still waits for (as `kubectl rollout status`), or undefined when every replica runs the
 * current pod template and is available.
 */
export function rolloutPending(d: V1Deployment): string | undefined {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  if ((s.observedGeneration ?? 0) < (d.metadata?.generation ?? 0)) return "waiting for the rollout to start";
  const updated = s.updatedReplicas ?? 0;
  if (updated < want) return `${updated} of ${want} replicas updated`;
  if ((s.replicas ?? 0) > updated) return `${(s.replicas ?? 0) - updated} old replicas stopping`;
  if ((s.availableReplicas ?? 0) < want) return `${s.availableReplicas ?? 0} of ${want} updated replicas available`;
  return undefined;
}
