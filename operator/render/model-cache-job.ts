// The model cache Job of an app at zero replicas: `gantry prepare` run once into the app's model volume, so the model
// is pulled (and a missing one reported) when the app is deployed, not when its first request is waiting for it. The
// pods' init container does the same when a replica starts; for an app that has never run one, this Job is what puts
// the model in place. Pure and deterministic.
//
// Its pod carries the app's label (the operator sees it with the app's pods) but not `managed-by`, so neither the
// Deployment's selector nor the Service's (both need the two) ever takes it for a server. It runs where the app's pods
// run (same node selector, tolerations and runtime class: a volume bound to a zone is bound where the servers are), and
// asks for no GPU. A model the hub does not have ends the Job at once (podFailurePolicy on prepare's exit code); other
// failures (the network) are tried again a few times, and an evicted pod does not count as one.
import { PREPARE_EXIT_MODEL_NOT_FOUND } from "../api/v1alpha1/prepare.ts";
import type { RenderConfig } from "./config.ts";
import { APP_LABEL, appLabels, controllerRef } from "./labels.ts";
import { modelPodSpec, PREPARE_CONTAINER } from "./deployment.ts";
import { stableHash } from "./hash.ts";
import type { ResolvedApp } from "./resolve.ts";

export const MODEL_CACHE_COMPONENT = "model-cache";

/** Longest Job name: the job controller puts it in a label of the Job's pods (a label value holds 63 characters). */
const MAX_NAME = 63;

export function renderModelCacheJob(app: ResolvedApp, config: RenderConfig) {
  const { initContainers, containers: _server, ...spec } = modelPodSpec(app, config);
  const podLabels = {
    ...config.podLabels,
    "app.kubernetes.io/name": "gantry",
    "app.kubernetes.io/instance": app.name,
    "app.kubernetes.io/component": MODEL_CACHE_COMPONENT,
    [APP_LABEL]: app.name,
  };
  const template = {
    metadata: {
      labels: podLabels,
      ...(Object.keys(config.podAnnotations).length ? { annotations: { ...config.podAnnotations } } : {}),
    },
    spec: { ...spec, containers: initContainers, restartPolicy: "Never" },
  };
  // A Job's pod template cannot change: another model, Modelfile or image is another Job, named by what it runs.
  const hash = stableHash({ app: app.name, template, ...(app.modelfile ? { modelfile: app.modelfile } : {}) }).slice(
    0,
    6,
  );
  const suffix = `-cache-${hash}`;
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${app.name.slice(0, MAX_NAME - suffix.length)}${suffix}`,
      namespace: app.namespace,
      labels: appLabels(app, MODEL_CACHE_COMPONENT),
      ownerReferences: [controllerRef(app)],
    },
    spec: {
      backoffLimit: 3,
      podFailurePolicy: {
        rules: [
          {
            action: "FailJob",
            onExitCodes: { containerName: PREPARE_CONTAINER, operator: "In", values: [PREPARE_EXIT_MODEL_NOT_FOUND] },
          },
          // A pod evicted or preempted (a node drained) is not a failed attempt.
          { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget" }] },
        ],
      },
      template,
    },
  };
}
