// Which cluster and org the platform commands act on, as kubectl decides it: the kubeconfig (--kubeconfig, the config
// file's, KUBECONFIG, ~/.kube/config), the context (--context, the config file's, the current one) and the org, which
// is a namespace (--org, the config file's, the context's namespace, "default"). Also the one place that turns the
// API server's errors into sentences.
import type { KubeConfig } from "@kubernetes/client-node";
import { isDnsLabel } from "../common/kube-names.ts";
import { loadKubeConfig, NoKubeconfigError } from "../common/kubeconfig.ts";
import type { CliConfig } from "./cli-config.ts";

/** The variables the kubeconfig choice reads, parsed by the CLI's config schema (server/cli/config.ts). */
export interface KubeEnv {
  KUBECONFIG?: string | undefined;
  KUBERNETES_SERVICE_HOST?: string | undefined;
}

export interface KubeTarget {
  kc: KubeConfig;
  context: string;
  /** The org: a namespace. */
  org: string;
  /** The API server's URL (for messages). */
  server: string;
}

export interface TargetFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  org?: string | undefined;
}

import { PlatformError } from "./platform-error.ts";

export { PlatformError };

export function connect(flags: TargetFlags, config: CliConfig, env: KubeEnv): KubeTarget {
  const file = flags.kubeconfig ?? config.kubeconfig;
  let kc: KubeConfig;
  try {
    kc = loadKubeConfig({ file, kubeconfigEnv: env.KUBECONFIG, inCluster: Boolean(env.KUBERNETES_SERVICE_HOST) });
  } catch (e) {
    if (e instanceof NoKubeconfigError) throw new PlatformError(e.message);
    throw new PlatformError(`cannot read the kubeconfig ${file ?? env.KUBECONFIG ?? ""}: ${(e as Error).message}`);
  }
  const context = flags.context ?? config.context ?? kc.getCurrentContext();
  const found = kc.getContextObject(context);
  if (!found) {
    const names = kc.getContexts().map((c) => c.name);
    throw new PlatformError(
      context
        ? `no context "${context}" in the kubeconfig (it has: ${names.join(", ") || "none"})`
        : `the kubeconfig has no current context: pass --context (it has: ${names.join(", ") || "none"})`,
    );
  }
  kc.setCurrentContext(context);
  const org = flags.org ?? config.org ?? found.namespace ?? "default";
  if (!isDnsLabel(org)) throw new PlatformError(`org "${org}" is not a DNS label (a namespace)`);
  return { kc, context, org, server: kc.getCurrentCluster()?.server ?? "(unknown server)" };
}

interface KubeStatus {
  message?: string;
  reason?: string;
  details?: { kind?: string; name?: string };
}

function statusOf(err: unknown): { code: number; status: KubeStatus | undefined; text: string } {
  const e = err as { code?: unknown; body?: unknown };
  const code = typeof e?.code === "number" ? e.code : 0;
  let status: KubeStatus | undefined;
  const body = typeof e?.body === "string" ? e.body : undefined;
  try {
    status = body ? (JSON.parse(body) as KubeStatus) : (e?.body as KubeStatus | undefined);
  } catch {
    status = undefined;
  }
  return { code, status, text: (status?.message ?? body ?? "").trim() };
}

/** The HTTP status of an API error (0 when the cluster was not reached). */
export const httpStatus = (err: unknown): number => statusOf(err).code;

/** One sentence for an API error; `what` names what was asked ("apply ModelApp acme/demo"). */
export function kubeErrorMessage(err: unknown, target: KubeTarget, what: string): string {
  const { code, status, text } = statusOf(err);
  if (code === 0) {
    const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
    const why = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err);
    return `cannot reach the cluster at ${target.server} (context ${target.context}): ${why}`;
  }
  if (code === 404 && status?.details?.kind === "namespaces")
    return `${what}: org "${status.details.name}" does not exist (an org is a namespace: kubectl create namespace ${status.details.name})`;
  if (code === 404 && (!status || status.reason !== "NotFound" || !status.details?.name))
    return `${what}: the cluster has no ModelApp resource type (install Gantry: helm install gantry charts/gantry, or kubectl apply --server-side -f crds/)`;
  if (code === 401) return `${what}: unauthorized: the credentials of context ${target.context} were refused`;
  if (code === 403) return `${what}: forbidden: ${text}`;
  if (code === 422) return `${what}: the cluster refused the ModelApp: ${text}`;
  return `${what}: ${text || `HTTP ${code}`}`;
}

export const isNotFound = (err: unknown): boolean => {
  const { code, status } = statusOf(err);
  return code === 404 && status?.reason === "NotFound" && Boolean(status.details?.name);
};
