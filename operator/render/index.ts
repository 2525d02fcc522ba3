// Everything an app needs, rendered from its resolved spec: the plan the reconciler applies. Pure.
import type { RenderConfig } from "./config.ts";
import type { OwnerReference } from "./labels.ts";
import { renderDeployment } from "./deployment.ts";
import { renderModelfileConfigMap } from "./modelfile-configmap.ts";
import { renderModelVolume, type VolumeUser } from "./pvc.ts";
import type { ResolvedApp } from "./resolve.ts";
import { renderService } from "./service.ts";

export type RenderedObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; ownerReferences?: OwnerReference[] };
  [key: string]: unknown;
};

export interface AppPlan {
  /** The model volume's claim, owned by every app sharing it (applied only when the operator created the claim). */
  volume: RenderedObject;
  /** Objects the app controls (the ConfigMap is applied before the Deployment that mounts it). */
  owned: RenderedObject[];
}

export function renderApp(app: ResolvedApp, config: RenderConfig, volumeUsers: readonly VolumeUser[]): AppPlan {
  const configMap = renderModelfileConfigMap(app);
  return {
    volume: renderModelVolume(volumeUsers),
    owned: [...(configMap ? [configMap] : []), renderDeployment(app, config), renderService(app, config)],
  };
}
