// The ConfigMap holding an app's Modelfile (FROM spec.model plus spec.modelfile), mounted into the create step. Pure.
import type { ResolvedApp } from "./resolve.ts";
import { appLabels, controllerRef } from "./labels.ts";

export const modelfileConfigMapName = (app: Pick<ResolvedApp, "name">): string => `${app.name}-modelfile`;

export function renderModelfileConfigMap(app: ResolvedApp) {
  if (!app.modelfile) return undefined;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: modelfileConfigMapName(app),
      namespace: app.namespace,
      labels: appLabels(app, "modelfile"),
      ownerReferences: [controllerRef(app)],
    },
    data: { Modelfile: app.modelfile },
  };
}
