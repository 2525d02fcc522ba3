// Shared steps of the operator's cluster tests: the control plane, the CRD, ModelApps through the real API.
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";
import { installCrd, kubectlResult } from "../../support/operator.ts";
import type { ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";
import { GROUP, PLURAL, VERSION } from "../../../operator/api/v1alpha1/modelapp.ts";

export interface OperatorCluster {
  cp: ControlPlane;
  kc: KubeConfig;
  custom: CustomObjectsApi;
}

/** The shared test cluster with the ModelApp CRD installed and the operator's namespace present. */
export async function operatorCluster(): Promise<OperatorCluster> {
  const cp = await ensureTestCluster();
  installCrd(cp);
  kubectlResult(cp, ["create", "namespace", "gantry-system"]); // fine when it exists
  const kc = kubeConfigFor(cp);
  return { cp, kc, custom: kc.makeApiClient(CustomObjectsApi) };
}

export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function modelApp(namespace: string, name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: "ModelApp", metadata: { name, namespace }, spec };
}

export async function createApp(c: OperatorCluster, app: Record<string, unknown>): Promise<void> {
  const namespace = (app.metadata as { namespace: string }).namespace;
  await c.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body: app });
}

export async function readApp(c: OperatorCluster, namespace: string, name: string): Promise<ModelApp> {
  return (await c.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    name,
  })) as ModelApp;
}

export const condition = (app: ModelApp, type: string) => app.status?.conditions?.find((c) => c.type === type);

/** Waits until the app's condition has the given status (and reason, when given); returns the app. */
export function waitForCondition(
  c: OperatorCluster,
  namespace: string,
  name: string,
  type: string,
  status: string,
  reason?: string,
  timeoutMs = 60_000,
): Promise<ModelApp> {
  return eventually(
    `${namespace}/${name} ${type}=${status}${reason ? ` (${reason})` : ""}`,
    async () => {
      const app = await readApp(c, namespace, name);
      const cond = condition(app, type);
      return cond?.status === status &&
        (reason === undefined || cond.reason === reason) &&
        app.status?.observedGeneration === app.metadata.generation
        ? app
        : undefined;
    },
    timeoutMs,
  );
}
