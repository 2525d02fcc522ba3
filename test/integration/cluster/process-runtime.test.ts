// The process runtime on the real test control plane: opted-in pods run as local processes, each at its own pod IP,
// with claim directories that outlive container restarts and the pod itself.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import type { KubeConfig, V1Container, V1Pod } from "@kubernetes/client-node";
import { CoreV1Api } from "@kubernetes/client-node";
import { Ollama } from "ollama";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { logsDir } from "../../cluster/processes.ts";
import { claimDir, containerPidFile } from "../../cluster/runtime/volumes.ts";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../../cluster/test-cluster.ts";
import { tinyModelPath } from "../../support/models.ts";

let cp: ControlPlane, kc: KubeConfig, ns: string, core: CoreV1Api;
const SERVER = path.resolve(import.meta.dirname, "../../cluster/fixtures/http-server.ts");

before(async () => {
  cp = await ensureTestCluster();
  kc = kubeConfigFor(cp);
  core = kc.makeApiClient(CoreV1Api);
  ns = await createTestNamespace(kc, "runtime");
});

after(async () => {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

/** What the runtime did with a pod (its log lines), so a timeout says where the pod got stuck. */
function runtimeLog(pod: string): string {
  let text = "";
  try {
    text = fs.readFileSync(path.join(logsDir(cp.dir), "process-runtime.log"), "utf8");
  } catch {
    /* not written yet */
  }
  return text
    .split("\n")
    .filter((l) => l.includes(`${ns}/${pod}`))
    .slice(-20)
    .join("\n");
}

async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  explain?: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${explain ? `\n${await explain().catch(String)}` : ""}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function createClaim(name: string): Promise<void> {
  await core.createNamespacedPersistentVolumeClaim({
    namespace: ns,
    body: { metadata: { name }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } },
  });
}

async function createPod(
  name: string,
  containers: V1Container[],
  claim: string,
  extra: Partial<V1Pod["spec"]> = {},
): Promise<void> {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, labels: { [PROCESS_RUNTIME_LABEL]: "true" } },
      spec: {
        tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
        terminationGracePeriodSeconds: 5,
        containers,
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }],
        ...extra,
      },
    },
  });
}

const eventReasons = async (pod: string): Promise<string[]> =>
  (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${pod}` })).items.map(
    (e) => e.reason ?? "",
  );
const kubectl = (...args: string[]): string =>
  execFileSync(path.join(cp.binDir, "kubectl"), ["--kubeconfig", cp.kubeconfig, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
const readPod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ name, namespace: ns });
const isReady = (p: V1Pod): boolean =>
  Boolean(p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
const readyPod = (name: string, timeoutMs?: number): Promise<V1Pod> =>
  eventually(
    `pod ${name} Ready`,
    async () => {
      const p = await readPod(name);
      return isReady(p) ? p : undefined;
    },
    timeoutMs,
    async () =>
      `status: ${JSON.stringify((await readPod(name)).status)}\nevents: ${(await eventReasons(name)).join(", ")}\nruntime:\n${runtimeLog(name)}`,
  );

function serverContainer(readiness = false): V1Container {
  return {
    name: "server",
    image: "gantry.invalid/test-server:1",
    command: ["node", SERVER],
    args: ["8080", "/data"],
    env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
    ports: [{ name: "http", containerPort: 8080 }],
    volumeMounts: [{ name: "data", mountPath: "/data" }],
    ...(readiness
      ? { readinessProbe: { httpGet: { path: "/ready", port: "http" }, periodSeconds: 1, failureThreshold: 1 } }
      : {}),
  };
}

test("a pod's process answers at its pod IP, is restarted when killed, and keeps its claim's files", async () => {
  await createClaim("web-data");
  await createPod("web", [serverContainer()], "web-data");
  const pod = await readyPod("web");
  const ip = pod.status?.podIP ?? "";
  assert.match(ip, /^10\.244\.\d+\.\d+$/);
  assert.equal(pod.status?.phase, "Running");
  // No readinessProbe: like a kubelet, Ready as soon as the process started, so wait for it to listen.
  type Answer = { pod: string; pid: number; hostname: string };
  const answer = (): Promise<Answer> =>
    eventually("the server to answer", async () => (await fetch(`http://${ip}:8080/`)).json() as Promise<Answer>);
  const first = await answer();
  assert.equal(first.pod, "web");
  assert.equal(first.hostname, "web");

  const put = await fetch(`http://${ip}:8080/files/note.txt`, { method: "PUT", body: "kept across restarts" });
  assert.equal(put.status, 200);
  assert.equal(
    fs.readFileSync(path.join(claimDir(cp.dir, ns, "web-data"), "note.txt"), "utf8"),
    "kept across restarts",
  );

  process.kill(first.pid, "SIGKILL");
  const restarted = await eventually("restartCount 1 and Ready", async () => {
    const p = await readPod("web");
    return p.status?.containerStatuses?.[0]?.restartCount === 1 && isReady(p) ? p : undefined;
  });
  assert.equal(restarted.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 137);
  assert.equal(restarted.status?.podIP, ip);
  const second = await answer();
  assert.notEqual(second.pid, first.pid);
  assert.equal(await (await fetch(`http://${ip}:8080/files/note.txt`)).text(), "kept across restarts");
  const reasons = await eventReasons("web");
  assert.ok(reasons.filter((r) => r === "Started").length >= 2, `events: ${reasons.join(", ")}`);
  assert.ok(reasons.includes("BackOff"), `events: ${reasons.join(", ")}`);

  await core.deleteNamespacedPod({ name: "web", namespace: ns });
  await eventually("the pod object to be gone", () =>
    readPod("web").then(
      () => undefined,
      () => true,
    ),
  );
  await assert.rejects(fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(2000) }));
  assert.throws(() => process.kill(second.pid, 0), /ESRCH/);
  assert.equal(
    fs.readFileSync(path.join(claimDir(cp.dir, ns, "web-data"), "terminated-web"), "utf8"),
    String(second.pid),
    "stopped with SIGTERM first",
  );
  assert.equal(
    fs.readFileSync(path.join(claimDir(cp.dir, ns, "web-data"), "note.txt"), "utf8"),
    "kept across restarts",
  );
});

test("the readinessProbe gates the Ready condition", async () => {
  await createClaim("gate-data");
  await createPod("gated", [serverContainer(true)], "gate-data");
  const running = await eventually("the container running", async () => {
    const p = await readPod("gated");
    return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  });
  const ip = running.status?.podIP ?? "";
  await eventually("the server answering", async () =>
    (await fetch(`http://${ip}:8080/ready`)).status === 503 ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 2500));
  const unready = await readPod("gated");
  assert.equal(isReady(unready), false);
  assert.equal(unready.status?.containerStatuses?.[0]?.ready, false);

  fs.writeFileSync(path.join(claimDir(cp.dir, ns, "gate-data"), "ready"), "");
  const ready = await readyPod("gated");
  assert.equal(ready.status?.containerStatuses?.[0]?.ready, true);
  fs.rmSync(path.join(claimDir(cp.dir, ns, "gate-data"), "ready"));
  await eventually("Ready to turn False again", async () => (isReady(await readPod("gated")) ? undefined : true));
});

test("init containers run in order before the containers; a failing one is restarted with backoff", async () => {
  await createClaim("init-data");
  const step = (name: string, script: string): V1Container => ({
    name,
    image: "busybox.invalid",
    command: ["sh", "-c", script],
    volumeMounts: [{ name: "data", mountPath: "/data" }],
  });
  await createPod("ordered", [serverContainer()], "init-data", {
    initContainers: [step("first", "echo first >> /data/order"), step("second", "echo second >> /data/order")],
  });
  await readyPod("ordered");
  assert.equal(fs.readFileSync(path.join(claimDir(cp.dir, ns, "init-data"), "order"), "utf8"), "first\nsecond\n");

  await createPod("failing", [serverContainer()], "init-data", { initContainers: [step("broken", "exit 3")] });
  const crashing = await eventually("the init container to be restarted", async () => {
    const p = await readPod("failing");
    return (p.status?.initContainerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
  });
  assert.equal(crashing.status?.phase, "Pending");
  assert.equal(crashing.status?.initContainerStatuses?.[0]?.lastState?.terminated?.exitCode, 3);
  assert.equal(crashing.status?.containerStatuses?.[0]?.state?.running, undefined);
});

test("restartPolicy decides what happens when containers exit: Never ends in Succeeded or Failed, OnFailure retries", async () => {
  await createClaim("jobs-data");
  const run = (name: string, script: string): V1Container => ({
    name,
    image: "busybox.invalid",
    command: ["sh", "-c", script],
  });
  await createPod("succeeds", [run("main", "echo first; echo second; exit 0")], "jobs-data", {
    restartPolicy: "Never",
  });
  await createPod("fails", [run("main", "exit 2")], "jobs-data", { restartPolicy: "Never" });
  await createPod("retries", [run("main", "exit 4")], "jobs-data", { restartPolicy: "OnFailure" });
  const phase = (name: string, want: string): Promise<V1Pod> =>
    eventually(`${name} ${want}`, async () => {
      const p = await readPod(name);
      return p.status?.phase === want ? p : undefined;
    });
  const succeeded = await phase("succeeds", "Succeeded");
  assert.equal(succeeded.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
  assert.equal(succeeded.status?.containerStatuses?.[0]?.state?.terminated?.reason, "Completed");
  assert.equal(kubectl("-n", ns, "logs", "succeeds"), "first\nsecond\n", "kubectl logs reads the container's output");
  assert.equal(kubectl("-n", ns, "logs", "succeeds", "--tail=1"), "second\n");
  const failed = await phase("fails", "Failed");
  assert.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 2);
  assert.equal(failed.status?.containerStatuses?.[0]?.restartCount, 0);
  const retried = await eventually("retries to be restarted", async () => {
    const p = await readPod("retries");
    return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
  });
  assert.equal(retried.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 4);
  assert.notEqual(retried.status?.phase, "Succeeded");
});

test("processes a container leaves behind end with it", async () => {
  await createClaim("orphan-data");
  await createPod(
    "orphans",
    [
      {
        name: "main",
        image: "busybox.invalid",
        command: ["sh", "-c", "sleep 600 & echo $! > /data/child; exit 3"],
        volumeMounts: [{ name: "data", mountPath: "/data" }],
      },
    ],
    "orphan-data",
    { restartPolicy: "Never" },
  );
  await eventually("the pod to fail", async () =>
    (await readPod("orphans")).status?.phase === "Failed" ? true : undefined,
  );
  const child = Number(fs.readFileSync(path.join(claimDir(cp.dir, ns, "orphan-data"), "child"), "utf8"));
  assert.ok(child > 0);
  await eventually(
    "the background process to be gone",
    async () => {
      try {
        process.kill(child, 0);
        return undefined;
      } catch {
        return true;
      }
    },
    10_000,
  );
});

test("ConfigMaps reach containers as env and files; a pod waits for a ConfigMap created after it", async () => {
  await createClaim("cm-data");
  await createPod(
    "configured",
    [
      {
        name: "main",
        image: "busybox.invalid",
        command: [
          "sh",
          "-c",
          'echo "$GREETING" > /data/seen; cat /etc/settings/greeting >> /data/seen; exec sleep 600',
        ],
        env: [{ name: "GREETING", valueFrom: { configMapKeyRef: { name: "settings", key: "greeting" } } }],
        volumeMounts: [
          { name: "data", mountPath: "/data" },
          { name: "settings", mountPath: "/etc/settings", readOnly: true },
        ],
      },
    ],
    "cm-data",
    {
      volumes: [
        { name: "data", persistentVolumeClaim: { claimName: "cm-data" } },
        { name: "settings", configMap: { name: "settings" } },
      ],
    },
  );
  const waiting = await eventually("the pod to wait for its ConfigMap", async () => {
    const p = await readPod("configured");
    return p.status?.containerStatuses?.[0]?.state?.waiting?.reason === "ContainerCreating" ? p : undefined;
  });
  assert.equal(waiting.status?.phase, "Pending");
  assert.ok((await eventReasons("configured")).includes("FailedMount"));

  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: "settings" }, data: { greeting: "hello from a ConfigMap" } },
  });
  const seen = path.join(claimDir(cp.dir, ns, "cm-data"), "seen");
  const expected = "hello from a ConfigMap\nhello from a ConfigMap"; // env value + newline, then the mounted file
  const content = await eventually("the container to have read its settings", async () => {
    const text = fs.existsSync(seen) ? fs.readFileSync(seen, "utf8") : "";
    return text.length >= expected.length ? text : undefined;
  });
  assert.equal(content, expected);
  assert.equal((await readPod("configured")).status?.phase, "Running");
});

test("a pod running `gantry serve` on the tiny model from its claim answers at its pod IP, and again after a restart", async () => {
  const models = claimDir(cp.dir, ns, "models");
  await createClaim("models");
  fs.mkdirSync(models, { recursive: true });
  fs.copyFileSync(await tinyModelPath(), path.join(models, "tiny.gguf"));
  await createPod(
    "serve",
    [
      {
        name: "gantry",
        image: "gantry.invalid/gantry:dev",
        args: ["serve", "--model", "/models/tiny.gguf"],
        env: [
          { name: "GANTRY_HOST", value: "0.0.0.0:11434" },
          { name: "GANTRY_MODELS", value: "/models/store" },
        ],
        volumeMounts: [{ name: "data", mountPath: "/models" }],
        readinessProbe: { httpGet: { path: "/health", port: 11434 }, periodSeconds: 1 },
      },
    ],
    "models",
  );
  const pod = await readyPod("serve", 120_000);
  const base = `http://${pod.status?.podIP}:11434`;
  const client = new Ollama({ host: base });

  const servesTheModel = async (): Promise<void> => {
    assert.equal((await fetch(`${base}/health`)).status, 200);
    const version = (await (await fetch(`${base}/api/version`)).json()) as { version: string };
    assert.match(version.version, /^\d+\.\d+\.\d+/);
    const loaded = await client.ps();
    assert.deepEqual(
      loaded.models.map((m) => m.name),
      ["/models/tiny.gguf"],
    );
    const out = await client.generate({
      model: "/models/tiny.gguf",
      prompt: "hello",
      stream: false,
      // Greedy: sampled, the tiny model ends a 4-token answer early now and then (the count is exact).
      options: { num_predict: 4, temperature: 0 },
    });
    assert.equal(out.done, true);
    assert.equal(out.eval_count, 4);
  };
  await servesTheModel();

  const pid = Number(fs.readFileSync(containerPidFile(cp.dir, pod, "gantry"), "utf8"));
  process.kill(pid, "SIGKILL");
  await eventually(
    "the gantry container restarted and Ready",
    async () => {
      const p = await readPod("serve");
      return p.status?.containerStatuses?.[0]?.restartCount === 1 && isReady(p) ? p : undefined;
    },
    120_000,
  );
  await servesTheModel();
  assert.ok(fs.existsSync(path.join(models, "tiny.gguf")));
});
