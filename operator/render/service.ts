// The app's Service: selects its ready server pods; the gateway routes through its EndpointSlices. Pure. Headless: no
// ClusterIP, which nothing uses (the gateway goes to the pods) and which costs at fleet scale: the API server allocates
// ClusterIPs one at a time (about 14 Services a second on the 2-core bench host: the fleet's slowest write), every
// node's proxy keeps rules for each, and the cluster's Service range runs out (docs/decisions/0017).
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
      clusterIP: "None",
      selector: selectorLabels(app),
      ports: [{ name: "http", port: config.serverPort, targetPort: "http", protocol: "TCP" }],
    },
  };
}

/**
 * The Service to apply over `live`: a Service made before Services were headless keeps its ClusterIP (immutable: an
 * apply of "None" over it fails), so the desired one leaves the field out. Pure.
 */
export function keepAllocatedClusterIp<T extends { spec: { clusterIP?: string } }>(
  desired: T,
  live: { spec?: { clusterIP?: string } } | undefined,
): T {
  const ip = live?.spec?.clusterIP;
  if (!ip || ip === "None") return desired;
  const { clusterIP: _none, ...spec } = desired.spec;
  return { ...desired, spec };
}
