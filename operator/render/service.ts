// The app's Service: selects its ready server pods; the gateway routes through its EndpointSlices. Pure.
import type { RenderConfig } from "./config.ts";
import { appLabels, controllerRef, selectorLabels } from "./labels.ts";
import type { ResolvedApp } from "./resolve.ts";

export function renderService(app: ResolvedApp, config: Pick<RenderConfig, "serverPort">) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: app.name,
      namespace: app.namespace,
      labels: appLabels(app, "model-server"),
      ownerReferences: [controllerRef(app)],
    },
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(app),
      ports: [{ name: "http", port: config.serverPort, targetPort: "http", protocol: "TCP" }],
    },
  };
}
