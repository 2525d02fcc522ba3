import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1ContainerState, V1ContainerStatus, V1Deployment, V1Pod } from "@kubernetes/client-node";
import {
  ModelAppStatusSchema,
  type ModelApp,
  type ModelAppStatus,
} from "../../../../operator/api/v1alpha1/modelapp.ts";
import { computeStatus, type Observed } from "../../../../operator/controller/status.ts";
import { trimPod } from "../../../../operator/kube/caches.ts";
import type { ResolvedApp } from "../../../../operator/render/resolve.ts";
import { MODEL, modelApp, resolved } from "../fixtures.ts";

const GATEWAY = "http://gw.example.com";
const T0 = new Date("2026-01-01T00:00:00Z"),
  T1 = new Date("2026-01-01T01:00:00Z");
const NOT_FOUND = JSON.stringify({ error: `model "${MODEL}" not found on the hub`, code: "MODEL_NOT_FOUND" });

const containerStatus = (
  name: string,
  state: V1ContainerState,
  extra: Partial<V1ContainerStatus> = {},
): V1ContainerStatus => ({ name, image: "gantry:1", imageID: "", ready: false, restartCount: 0, state, ...extra });

interface PodShape {
  node?: string;
  unschedulable?: string;
  prepare?: V1ContainerState;
  prepareLast?: V1ContainerState;
  server?: V1ContainerState;
  serverReady?: boolean;
  serverLast?: V1ContainerState;
}

function pod(
  { node, unschedulable, prepare, prepareLast, server, serverReady, serverLast }: PodShape,
  name = "chat-abc",
): V1Pod {
  return {
    metadata: { name, namespace: "acme" },
    spec: { containers: [], ...(node ? { nodeName: node } : {}) },
    status: {
      conditions: unschedulable
        ? [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: unschedulable }]
        : node
          ? [{ type: "PodScheduled", status: "True" }]
          : [],
      ...(prepare
        ? {
            initContainerStatuses: [containerStatus("prepare", prepare, prepareLast ? { lastState: prepareLast } : {})],
          }
        : {}),
      ...(server
        ? {
            containerStatuses: [
              containerStatus("server", server, {
                ready: serverReady ?? false,
                ...(serverLast ? { lastState: serverLast } : {}),
              }),
            ],
          }
        : {}),
    },
  };
}

const running: V1ContainerState = { running: { startedAt: T0 } };
const exited = (exitCode: number, message?: string): V1ContainerState => ({
  terminated: { exitCode, ...(message === undefined ? {} : { message }) },
});
const deployment = (replicas: number, readyReplicas = 0): V1Deployment => ({ status: { replicas, readyReplicas } });

/** A pod that pulled the model (digest sha256:abc) and serves. */
const serving = (node = "node-1") =>
  pod({
    node,
    prepare: exited(0, JSON.stringify({ model: MODEL, digest: "sha256:abc" })),
    server: running,
    serverReady: true,
  });

interface Case {
  app?: ModelApp;
  resolved?: ResolvedApp | { invalid: string };
  observed?: Partial<Observed>;
  now?: Date;
}

function status(c: Case = {}): ModelAppStatus {
  const app = c.app ?? modelApp({ scaling: { minReplicas: 1, maxReplicas: 2 } });
  return computeStatus({
    app,
    resolved: c.resolved ?? resolved(app.spec),
    observed: { pods: [], ...c.observed },
    gatewayUrl: GATEWAY,
    now: c.now ?? T0,
  });
}

const cond = (s: ModelAppStatus, type: string) => {
  const c = s.conditions?.find((x) => x.type === type);
  assert.ok(c, `no ${type} condition in ${JSON.stringify(s.conditions)}`);
  return c;
};
/** [status, reason] of a condition. */
const sr = (s: ModelAppStatus, type: string) => [cond(s, type).status, cond(s, type).reason];

test("an invalid spec: Ready False InvalidSpec with the reason as message, the others Unknown", () => {
  const s = status({ resolved: { invalid: 'spec.resources.profile: unknown resource profile "tpu"' } });
  assert.deepEqual(sr(s, "Ready"), ["False", "InvalidSpec"]);
  assert.match(cond(s, "Ready").message, /unknown resource profile "tpu"/);
  assert.deepEqual(sr(s, "ModelCached"), ["Unknown", "InvalidSpec"]);
  assert.deepEqual(sr(s, "Scheduled"), ["Unknown", "InvalidSpec"]);
  assert.equal(s.observedGeneration, 1);
  assert.equal(s.url, `${GATEWAY}/acme/chat`);
});

test("scaled to zero with no pods, the model not pulled yet: not Ready until the model cache Job has it", () => {
  const app = modelApp();
  const s = status({ app, observed: { deployment: deployment(0) } });
  assert.deepEqual(sr(s, "Ready"), ["False", "Pending"]);
  assert.match(cond(s, "Ready").message, /is to be pulled into volume models by a Job/);
  assert.deepEqual(sr(s, "Scheduled"), ["Unknown", "NoReplicas"]);
  assert.deepEqual(sr(s, "ModelCached"), ["Unknown", "Pending"]);
  assert.equal(s.replicas, 0);
  assert.equal(s.readyReplicas, 0);
  assert.equal(s.modelRef, MODEL);
  assert.equal(s.model, undefined);
});

/** The model cache Job's pod: its prepare step is the pod's one container. */
const cachePod = (prepare: V1ContainerState): V1Pod => ({
  metadata: {
    name: "chat-cache-abc123-x7k2p",
    namespace: "acme",
    labels: { "app.kubernetes.io/component": "model-cache", "gantry.dev/modelapp": "chat" },
  },
  spec: { containers: [], nodeName: "node-1" },
  status: { containerStatuses: [containerStatus("prepare", prepare)] },
});

test("scaled to zero, the model cache Job's pod: Pulling while it runs, then Ready True ScaledToZero with the digest", () => {
  const app = modelApp();
  const pulling = status({
    app,
    observed: {
      deployment: deployment(0),
      pods: [cachePod(running)],
      cacheJob: { name: "chat-cache-abc123", state: "running" },
    },
  });
  assert.deepEqual(sr(pulling, "ModelCached"), ["False", "Pulling"]);
  assert.match(cond(pulling, "ModelCached").message, /\(Job chat-cache-abc123\)$/);
  assert.deepEqual(sr(pulling, "Ready"), ["False", "Pulling"]);
  assert.deepEqual(sr(pulling, "Scheduled"), ["Unknown", "NoReplicas"], "the Job's pod is not a replica");
  const done = status({
    app: { ...app, status: pulling },
    observed: {
      deployment: deployment(0),
      pods: [cachePod(exited(0, JSON.stringify({ model: MODEL, digest: "sha256:abc" })))],
    },
  });
  assert.deepEqual(sr(done, "ModelCached"), ["True", "Cached"]);
  assert.deepEqual(sr(done, "Ready"), ["True", "ScaledToZero"]);
  assert.equal(done.model, "sha256:abc");
  // The Job and its pod are gone: what was known about the model still holds.
  const later = status({ app: { ...app, status: done }, observed: { deployment: deployment(0) } });
  assert.deepEqual(
    [sr(later, "ModelCached"), sr(later, "Ready"), later.model],
    [["True", "Cached"], ["True", "ScaledToZero"], "sha256:abc"],
  );
  const missing = status({ app, observed: { deployment: deployment(0), pods: [cachePod(exited(3, NOT_FOUND))] } });
  assert.deepEqual(sr(missing, "Ready"), ["False", "ModelNotFound"]);
});

test("replicas wanted but no pods yet: waiting, not ready", () => {
  const s = status();
  assert.deepEqual(sr(s, "Scheduled"), ["Unknown", "Pending"]);
  assert.deepEqual(sr(s, "Ready"), ["False", "Starting"]);
});

test("status carries the URL through the gateway, the selector and the replica counts", () => {
  const app = modelApp({ scaling: { minReplicas: 1, maxReplicas: 2 } });
  const s = computeStatus({
    app,
    resolved: resolved(app.spec),
    observed: { pods: [], deployment: deployment(2, 1) },
    gatewayUrl: "http://gw.example.com/",
    now: T0,
  });
  assert.equal(s.url, "http://gw.example.com/acme/chat");
  assert.equal(s.selector, "gantry.dev/modelapp=chat,app.kubernetes.io/managed-by=gantry-operator");
  assert.deepEqual([s.replicas, s.readyReplicas], [2, 1]);
});

test("a pod that does not fit for lack of GPUs: Scheduled and Ready False InsufficientGPU", () => {
  const app = modelApp({ resources: { profile: "nvidia-gpu" }, scaling: { minReplicas: 1, maxReplicas: 1 } });
  const message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
  const s = status({ app, observed: { deployment: deployment(1), pods: [pod({ unschedulable: message })] } });
  assert.deepEqual(sr(s, "Scheduled"), ["False", "InsufficientGPU"]);
  assert.ok(cond(s, "Scheduled").message.includes(message));
  assert.match(cond(s, "Scheduled").message, /nvidia\.com\/gpu/);
  assert.deepEqual(sr(s, "Ready"), ["False", "InsufficientGPU"]);
});

test("other scheduling failures are Unschedulable with the scheduler's message", () => {
  // [profile, scheduler message]
  const cases: [string, string][] = [
    ["cpu", "0/3 nodes are available: 3 Insufficient cpu."],
    ["cpu", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."],
    ["nvidia-gpu", "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."],
  ];
  for (const [profile, message] of cases) {
    const app = modelApp({ resources: { profile }, scaling: { minReplicas: 1, maxReplicas: 1 } });
    const s = status({ app, observed: { deployment: deployment(1), pods: [pod({ unschedulable: message })] } });
    assert.deepEqual(sr(s, "Scheduled"), ["False", "Unschedulable"], `${profile}: ${message}`);
    assert.equal(cond(s, "Scheduled").message, message);
    assert.deepEqual(sr(s, "Ready"), ["False", "Unschedulable"], message);
  }
});

test("scheduled pods: Scheduled True naming their nodes", () => {
  const s = status({
    observed: {
      deployment: deployment(2),
      pods: [pod({ node: "node-b", prepare: running }), pod({ node: "node-a", prepare: running }, "chat-2")],
    },
  });
  assert.deepEqual(sr(s, "Scheduled"), ["True", "Scheduled"]);
  assert.match(cond(s, "Scheduled").message, /node-a, node-b/);
});

test("prepare running: ModelCached False Pulling and Ready False Pulling", () => {
  const s = status({ observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: running })] } });
  assert.deepEqual(sr(s, "ModelCached"), ["False", "Pulling"]);
  assert.match(cond(s, "ModelCached").message, new RegExp(`${MODEL}.*volume models`));
  assert.deepEqual(sr(s, "Ready"), ["False", "Pulling"]);
});

test("prepare failed with MODEL_NOT_FOUND: ModelCached and Ready False ModelNotFound with the report's error", () => {
  const s = status({
    observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: exited(1, NOT_FOUND) })] },
  });
  assert.deepEqual(sr(s, "ModelCached"), ["False", "ModelNotFound"]);
  assert.match(cond(s, "ModelCached").message, /not found/);
  assert.deepEqual(sr(s, "Ready"), ["False", "ModelNotFound"]);
  assert.equal(cond(s, "Ready").message, cond(s, "ModelCached").message);
});

test("a crash-looping prepare reports its last failure", () => {
  const s = status({
    observed: {
      deployment: deployment(1),
      pods: [
        pod({
          node: "n1",
          prepare: { waiting: { reason: "CrashLoopBackOff" } },
          prepareLast: exited(1, NOT_FOUND),
        }),
      ],
    },
  });
  assert.deepEqual(sr(s, "ModelCached"), ["False", "ModelNotFound"]);
  assert.deepEqual(sr(s, "Ready"), ["False", "ModelNotFound"]);
});

test("other prepare failures are PullFailed with the error, or the last log line, or the exit code", () => {
  // termination message → ModelCached message
  const cases: [string | undefined, RegExp][] = [
    [JSON.stringify({ error: "connection reset by peer", code: "UPSTREAM_FAILED" }), /^connection reset by peer$/],
    ["downloading...\nerror: disk full\n", /^error: disk full$/],
    [undefined, /exit code 2/],
  ];
  for (const [message, want] of cases) {
    const s = status({
      observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: exited(2, message) })] },
    });
    assert.deepEqual(sr(s, "ModelCached"), ["False", "PullFailed"], String(message));
    assert.match(cond(s, "ModelCached").message, want);
    assert.deepEqual(sr(s, "Ready"), ["False", "PullFailed"], String(message));
  }
});

test("prepare succeeded: ModelCached True and the digest in status.model", () => {
  const s = status({
    observed: {
      deployment: deployment(1),
      pods: [
        pod({ node: "n1", prepare: exited(0, JSON.stringify({ model: "m", digest: "sha256:abc" })), server: running }),
      ],
    },
  });
  assert.deepEqual(sr(s, "ModelCached"), ["True", "Cached"]);
  assert.equal(s.model, "sha256:abc");
  assert.equal(s.modelRef, MODEL);
  assert.deepEqual(sr(s, "Ready"), ["False", "Starting"], "cached but not ready yet");
});

test("a ready replica: Ready True Serving", () => {
  const s = status({ observed: { deployment: deployment(1, 1), pods: [serving()] } });
  assert.deepEqual(sr(s, "Ready"), ["True", "Serving"]);
  assert.match(cond(s, "Ready").message, /1 of 1 replicas ready/);
  assert.deepEqual(sr(s, "ModelCached"), ["True", "Cached"]);
  assert.deepEqual(sr(s, "Scheduled"), ["True", "Scheduled"]);
  assert.equal(s.readyReplicas, 1);
});

test("a crash-looping server: Ready False ServerFailed with its last words", () => {
  const s = status({
    observed: {
      deployment: deployment(1),
      pods: [
        pod({
          node: "n1",
          prepare: exited(0, JSON.stringify({ digest: "sha256:abc" })),
          server: { waiting: { reason: "CrashLoopBackOff" } },
          serverLast: exited(1, "loading\nout of memory: need 9 GiB"),
        }),
      ],
    },
  });
  assert.deepEqual(sr(s, "Ready"), ["False", "ServerFailed"]);
  assert.match(cond(s, "Ready").message, /CrashLoopBackOff: out of memory: need 9 GiB/);
});

test("a server killed without a word: the reason is how it ended, not its last request's log line", () => {
  const crashLoop = (serverLast: V1ContainerState) =>
    cond(
      status({
        observed: {
          deployment: deployment(1),
          pods: [
            pod({
              node: "n1",
              prepare: exited(0, JSON.stringify({ digest: "sha256:abc" })),
              server: { waiting: { reason: "CrashLoopBackOff" } },
              serverLast,
            }),
          ],
        },
      }),
      "Ready",
    ).message;
  const access = JSON.stringify({ level: "info", name: "gantry-serve", method: "GET", path: "/v1/models", msg: "x" });
  const killed = crashLoop({ terminated: { exitCode: 137, reason: "Error", message: `loaded\n${access}\n` } });
  assert.equal(killed, "CrashLoopBackOff: the server exited with code 137 (SIGKILL)");
  assert.equal(
    crashLoop({ terminated: { exitCode: 137, reason: "OOMKilled", message: access } }),
    "CrashLoopBackOff: the server exited with code 137 (OOMKilled, SIGKILL)",
  );
  const fatal = JSON.stringify({ level: "error", msg: "engine failed", err: { message: "bad tensor" } });
  assert.equal(crashLoop(exited(1, fatal)), "CrashLoopBackOff: engine failed: bad tensor");
  assert.equal(crashLoop(exited(1, "Error: no such model\n")), "CrashLoopBackOff: Error: no such model");
});

test("an object owned by someone else: Ready False ResourceExists", () => {
  const s = status({
    observed: {
      deployment: deployment(1, 1),
      pods: [serving()],
      conflict: "Service acme/chat exists and is not managed by this app",
    },
  });
  assert.deepEqual(sr(s, "Ready"), ["False", "ResourceExists"]);
  assert.match(cond(s, "Ready").message, /Service acme\/chat/);
});

test("conditions are ordered by type and carry the generation", () => {
  const s = status({
    app: modelApp({ scaling: { minReplicas: 1, maxReplicas: 1 } }, { generation: 7 }),
    observed: { deployment: deployment(1, 1), pods: [serving()] },
  });
  assert.deepEqual(
    s.conditions?.map((c) => c.type),
    ["ModelCached", "Ready", "Scheduled"],
  );
  assert.equal(s.observedGeneration, 7);
  for (const c of s.conditions!) assert.equal(c.observedGeneration, 7, c.type);
});

test("recomputing from the written status with the same observations changes nothing", () => {
  const scenarios: [string, Case][] = [
    ["scaled to zero", { app: modelApp(), observed: { deployment: deployment(0) } }],
    ["pulling", { observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: running })] } }],
    [
      "model not found",
      { observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: exited(1, NOT_FOUND) })] } },
    ],
    ["serving", { observed: { deployment: deployment(1, 1), pods: [serving()] } }],
    ["invalid", { resolved: { invalid: "spec.model: bad" } }],
  ];
  for (const [name, c] of scenarios) {
    const app = c.app ?? modelApp({ scaling: { minReplicas: 1, maxReplicas: 2 } });
    const first = status({ ...c, app });
    const second = status({ ...c, app: { ...app, status: first }, now: T1 });
    assert.deepEqual(second, first, name);
  }
});

test("lastTransitionTime stays while a condition keeps its status, and moves when it changes", () => {
  const app = modelApp({ scaling: { minReplicas: 1, maxReplicas: 1 } });
  const pulling = status({
    app,
    observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: running })] },
  });
  assert.equal(cond(pulling, "Ready").lastTransitionTime, "2026-01-01T00:00:00Z");
  const starting = status({
    app: { ...app, status: pulling },
    now: T1,
    observed: { deployment: deployment(1), pods: [pod({ node: "n1", prepare: exited(0, "{}"), server: running })] },
  });
  assert.deepEqual(sr(starting, "Ready"), ["False", "Starting"]);
  assert.equal(cond(starting, "Ready").lastTransitionTime, "2026-01-01T00:00:00Z", "False → False: kept");
  assert.equal(cond(starting, "Scheduled").lastTransitionTime, "2026-01-01T00:00:00Z");
  assert.equal(cond(starting, "ModelCached").lastTransitionTime, "2026-01-01T01:00:00Z", "False → True: moved");
});

test("scaled to zero after serving: ModelCached stays True with the digest for the same model", () => {
  const app = modelApp({ scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 1 });
  const wasServing = status({ app, observed: { deployment: deployment(1, 1), pods: [serving()] } });
  const idleApp = { ...modelApp({ scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 0 }), status: wasServing };
  const idle = status({ app: idleApp, now: T1, observed: { deployment: deployment(0) } });
  assert.deepEqual(sr(idle, "ModelCached"), ["True", "Cached"]);
  assert.equal(cond(idle, "ModelCached").lastTransitionTime, "2026-01-01T00:00:00Z");
  assert.equal(idle.model, "sha256:abc");
  assert.deepEqual(sr(idle, "Ready"), ["True", "ScaledToZero"]);
});

test("a changed spec.model forgets what was cached for the old one", () => {
  const app = modelApp({ scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 1 });
  const wasServing = status({ app, observed: { deployment: deployment(1, 1), pods: [serving()] } });
  const changed = {
    ...modelApp(
      { model: "hf.co/org/other:Q8_0", scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 0 },
      { generation: 2 },
    ),
    status: wasServing,
  };
  const s = status({ app: changed, now: T1, observed: { deployment: deployment(0) } });
  assert.deepEqual(sr(s, "ModelCached"), ["Unknown", "Pending"]);
  assert.equal(s.model, undefined);
  assert.equal(s.modelRef, "hf.co/org/other:Q8_0");
});

test("a spec fixed after being invalid no longer reports InvalidSpec", () => {
  const app = modelApp();
  const bad = status({ app, resolved: { invalid: "spec.model: bad" } });
  const fixed = status({
    app: { ...modelApp({}, { generation: 2 }), status: bad },
    now: T1,
    observed: { deployment: deployment(0) },
  });
  for (const type of ["Ready", "ModelCached", "Scheduled"])
    assert.notEqual(cond(fixed, type).reason, "InvalidSpec", type);
});

test("after a new generation every condition says it describes that generation", () => {
  // metav1.Condition.observedGeneration: a condition older than metadata.generation is out of date. The operator
  // re-evaluated ModelCached for generation 2 (same model, volume unchanged) and kept it; it must say so.
  const app = modelApp({ scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 1 });
  const wasServing = status({ app, observed: { deployment: deployment(1, 1), pods: [serving()] } });
  const next = {
    ...modelApp({ auth: "public", scaling: { minReplicas: 0, maxReplicas: 1 }, replicas: 0 }, { generation: 2 }),
    status: wasServing,
  };
  const s = status({ app: next, now: T1, observed: { deployment: deployment(0) } });
  assert.equal(s.observedGeneration, 2);
  for (const c of s.conditions!)
    assert.equal(c.observedGeneration, 2, `${c.type} still says generation ${c.observedGeneration}`);
});

test("the computed status satisfies the CRD's status schema", () => {
  const cases: Case[] = [
    { observed: { deployment: deployment(1, 1), pods: [serving()] } },
    { resolved: { invalid: "x" } },
    {
      app: modelApp({ resources: { profile: "nvidia-gpu" }, scaling: { minReplicas: 1, maxReplicas: 1 } }),
      observed: { pods: [pod({ unschedulable: "0/1 nodes: Insufficient nvidia.com/gpu" })] },
    },
  ];
  for (const c of cases) {
    const r = ModelAppStatusSchema.safeParse(status(c));
    assert.ok(r.success, r.success ? "" : r.error.message);
  }
});

test("the model cache Job: a failed attempt while it runs on is a retry, not the app's failure; its end is", () => {
  const app = modelApp();
  const blip = exited(1, JSON.stringify({ error: "fetch failed: ECONNRESET", code: "PULL_FAILED" }));
  const job = (state: "running" | "failed") => ({ name: "chat-cache-abc123", state });
  const retrying = status({ app, observed: { pods: [cachePod(blip), cachePod(running)], cacheJob: job("running") } });
  assert.deepEqual(
    [sr(retrying, "ModelCached"), sr(retrying, "Ready")],
    [
      ["False", "Pulling"],
      ["False", "Pulling"],
    ],
  );
  const waiting = status({ app, observed: { pods: [cachePod(blip)], cacheJob: job("running") } });
  assert.deepEqual(sr(waiting, "Ready"), ["False", "Pulling"], "between attempts");
  const gaveUp = status({ app, observed: { pods: [cachePod(blip)], cacheJob: job("failed") } });
  assert.deepEqual(sr(gaveUp, "Ready"), ["False", "PullFailed"]);
  assert.match(cond(gaveUp, "Ready").message, /ECONNRESET/);
  const missing = status({ app, observed: { pods: [cachePod(exited(3, NOT_FOUND))], cacheJob: job("running") } });
  assert.deepEqual(sr(missing, "Ready"), ["False", "ModelNotFound"], "a missing model is final at once");
});

test("the model cache Job: complete with its pod already gone is cached; a pod that cannot run says why", () => {
  const app = modelApp();
  const complete = status({ app, observed: { pods: [], cacheJob: { name: "chat-cache-abc123", state: "complete" } } });
  assert.deepEqual(
    [sr(complete, "ModelCached"), sr(complete, "Ready")],
    [
      ["True", "Cached"],
      ["True", "ScaledToZero"],
    ],
  );
  const unschedulable: V1Pod = {
    ...cachePod(running),
    status: {
      conditions: [
        { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes are available" },
      ],
    },
  };
  const stuck = status({
    app,
    observed: { pods: [unschedulable], cacheJob: { name: "chat-cache-abc123", state: "running" } },
  });
  assert.deepEqual(sr(stuck, "Ready"), ["False", "Pulling"]);
  assert.match(
    cond(stuck, "Ready").message,
    /^Job chat-cache-abc123 cannot pull .* yet: its pod cannot be scheduled: 0\/3 nodes are available$/,
  );
  const badImage = status({
    app,
    observed: {
      pods: [cachePod({ waiting: { reason: "ImagePullBackOff", message: "no such image" } })],
      cacheJob: { name: "chat-cache-abc123", state: "running" },
    },
  });
  assert.match(
    cond(badImage, "ModelCached").message,
    /its pod waits: ImagePullBackOff: the node cannot pull image "gantry:1" \(no such image\); push it to a registry/,
  );
});

test("a server pod whose image cannot be pulled (init container first): Ready False naming the image", () => {
  for (const p of [
    pod({ node: "n1", prepare: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } } }),
    pod({ node: "n1", prepare: exited(0), server: { waiting: { reason: "ErrImagePull" } } }),
  ]) {
    const s = status({ observed: { deployment: deployment(1), pods: [p] } });
    assert.deepEqual(sr(s, "Ready"), ["False", "ServerFailed"]);
    assert.match(cond(s, "Ready").message, /^(ImagePullBackOff|ErrImagePull): the node cannot pull image "gantry:1"/);
    assert.match(cond(s, "Ready").message, /set the chart's image\.repository$/);
  }
});

test("the operator's pod cache keeps all the status reads: the same status from trimmed pods (spec: the node only)", () => {
  const full = (p: V1Pod): V1Pod => ({
    ...p,
    spec: {
      ...p.spec!,
      containers: [{ name: "server", image: "gantry:1", args: ["serve"] }],
      volumes: [{ name: "m" }],
    },
  });
  const pods = [full(serving("node-1")), full(pod({ unschedulable: "0/3 nodes: Insufficient nvidia.com/gpu" }, "b"))];
  const trimmed = pods.map((p) => structuredClone(p));
  trimmed.forEach(trimPod);
  assert.deepEqual(trimmed[0]!.spec, { containers: [], nodeName: "node-1" });
  assert.deepEqual(trimmed[0]!.status, pods[0]!.status);
  const observed = { deployment: deployment(2, 1) };
  assert.deepEqual(status({ observed: { ...observed, pods: trimmed } }), status({ observed: { ...observed, pods } }));
});
