import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import type { Condition, ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";
import {
  appUrl,
  clusterInternalHint,
  conditionChanges,
  deployState,
  rolloutPending,
  summarizeApp,
} from "../../../server/platform/app-status.ts";

const cond = (type: string, status: Condition["status"], reason: string, message: string): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

function app(generation: number, observed: number | undefined, conditions: Condition[] = []): ModelApp {
  return {
    apiVersion: "gantry.dev/v1alpha1",
    kind: "ModelApp",
    metadata: { name: "demo", namespace: "acme", generation, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { model: "hf.co/o/r", auth: "private", scaling: { minReplicas: 1, maxReplicas: 3 } } as ModelApp["spec"],
    status: {
      ...(observed === undefined ? {} : { observedGeneration: observed }),
      conditions,
      replicas: 1,
      readyReplicas: 1,
      url: "http://gateway.svc/acme/demo",
    },
  };
}

test("the URL: --base-url or the config file's base, else what the operator reported", () => {
  const a = app(1, 1);
  assert.equal(appUrl(a, "https://api.example.com/"), "https://api.example.com/acme/demo");
  assert.equal(appUrl(a, undefined), "http://gateway.svc/acme/demo");
});

test("a deploy waits for its generation; Ready ends it; a failure reason fails it; a transient one waits", () => {
  const ready = cond("Ready", "True", "Serving", "1 of 1 replicas ready");
  assert.deepEqual(deployState(app(2, 1, [ready]), 2), { phase: "waiting" }, "the old generation's Ready");
  assert.deepEqual(deployState(app(2, 2, [ready]), 2), { phase: "ready", message: "1 of 1 replicas ready" });
  const zero = cond("Ready", "True", "ScaledToZero", "scaled to zero");
  assert.equal(deployState(app(1, 1, [zero]), 1).phase, "ready");
  for (const reason of ["ModelNotFound", "InsufficientGPU", "InvalidSpec", "PullFailed", "ServerFailed"]) {
    assert.deepEqual(deployState(app(1, 1, [cond("Ready", "False", reason, "why")]), 1), {
      phase: "failed",
      reason,
      message: "why",
    });
  }
  for (const reason of ["Pulling", "Starting", "Pending"])
    assert.equal(deployState(app(1, 1, [cond("Ready", "False", reason, "…")]), 1).phase, "waiting", reason);
});

test("condition lines: only changes of the deployed generation; a Ready that repeats another condition is left out", () => {
  const pulling = [
    cond("Scheduled", "True", "Scheduled", "pods run on cpu-node-0"),
    cond("ModelCached", "False", "Pulling", "pulling m"),
    cond("Ready", "False", "Pulling", "pulling m"),
  ];
  assert.deepEqual(conditionChanges(undefined, app(2, 1, pulling), 2), [], "not observed yet");
  const first = app(1, 1, pulling);
  assert.deepEqual(conditionChanges(undefined, first, 1), [
    "Scheduled: pods run on cpu-node-0",
    "ModelCached: Pulling: pulling m",
  ]);
  assert.deepEqual(conditionChanges(first, first, 1), []);
  const served = app(1, 1, [
    pulling[0]!,
    cond("ModelCached", "True", "Cached", "m is in volume models"),
    cond("Ready", "True", "Serving", "1 of 1 replicas ready"),
  ]);
  assert.deepEqual(conditionChanges(first, served, 1), [
    "ModelCached: m is in volume models",
    "Ready: 1 of 1 replicas ready",
  ]);
});

test("the summary of list and get: state in one word, replicas, scaling bounds", () => {
  const s = summarizeApp(app(1, 1, [cond("Ready", "True", "Serving", "1 of 1 replicas ready")]), undefined);
  assert.deepEqual(
    { state: s.state, ready: s.ready, replicas: s.replicas, min: s.minReplicas, max: s.maxReplicas, auth: s.auth },
    { state: "Ready", ready: true, replicas: 1, min: 1, max: 3, auth: "private" },
  );
  assert.equal(summarizeApp(app(1, undefined), undefined).state, "Pending");
  assert.equal(
    summarizeApp(app(1, 1, [cond("Ready", "False", "ModelNotFound", "no")]), undefined).state,
    "ModelNotFound",
  );
});

test("rollout: done only when every replica runs the current template and is available", () => {
  const dep = (generation: number, spec: number, s: V1Deployment["status"]): V1Deployment => ({
    metadata: { generation },
    spec: { replicas: spec, selector: {}, template: {} },
    status: s,
  });
  assert.match(
    rolloutPending(dep(2, 1, { observedGeneration: 1, updatedReplicas: 1, replicas: 1, availableReplicas: 1 }))!,
    /start/,
  );
  assert.match(
    rolloutPending(dep(2, 1, { observedGeneration: 2, updatedReplicas: 0, replicas: 1, availableReplicas: 1 }))!,
    /0 of 1 replicas updated/,
  );
  assert.match(
    rolloutPending(dep(2, 1, { observedGeneration: 2, updatedReplicas: 1, replicas: 2, availableReplicas: 1 }))!,
    /1 old replicas stopping/,
  );
  assert.match(
    rolloutPending(dep(2, 1, { observedGeneration: 2, updatedReplicas: 1, replicas: 1, availableReplicas: 0 }))!,
    /0 of 1 updated replicas available/,
  );
  assert.equal(
    rolloutPending(dep(2, 1, { observedGeneration: 2, updatedReplicas: 1, replicas: 1, availableReplicas: 1 })),
    undefined,
  );
  assert.equal(rolloutPending(dep(3, 0, { observedGeneration: 3 })), undefined, "scaled to zero");
});

test("an app's summary names the model requests send: <app>:latest when a modelfile applies", () => {
  const a = app(1, 1);
  // The name as the pod lists it (GET /v1/models): a hub model without a tag is its :latest.
  assert.equal(summarizeApp(a, undefined).servedModel, "hf.co/o/r:latest");
  const tuned = { ...a, spec: { ...a.spec, modelfile: "SYSTEM be terse" } } as ModelApp;
  assert.deepEqual(
    [summarizeApp(tuned, undefined).model, summarizeApp(tuned, undefined).servedModel],
    ["hf.co/o/r", "demo:latest"],
  );
});

test("a cluster-internal app URL (the gateway Service's .svc name) comes with the port-forward that reaches it", () => {
  assert.equal(
    clusterInternalHint("http://gantry-gateway.gantry-system.svc/acme/demo"),
    "gantry-gateway.gantry-system.svc is the gateway's address inside the cluster. From this machine:\n" +
      "  kubectl -n gantry-system port-forward svc/gantry-gateway 8080:80 &\n" +
      "  then add --base-url http://127.0.0.1:8080 (or set the chart's gateway.ingress or operator.config.gatewayUrl)",
  );
  assert.match(
    clusterInternalHint("http://gw.ops.svc.cluster.local:8000/a/b")!,
    /-n ops port-forward svc\/gw 8080:8000 &/,
  );
  for (const url of ["https://api.example.com/acme/demo", "http://127.0.0.1:8080/acme/demo", "not a url"])
    assert.equal(clusterInternalHint(url), undefined, url);
});
