// The kubelet's job for one pod: network namespace, volumes, init containers in order (each to completion), then the
// containers, restarted per restartPolicy with exponential backoff, readiness/liveness probes, status written back,
// and graceful termination. Backoff starts at GANTRY_RUNTIME_BACKOFF_SECONDS (default 1 s, a real kubelet uses 10 s)
// and doubles up to 30 s, so restart tests stay short; it resets after a container ran for 60 s.
import fs from "node:fs";
import path from "node:path";
import type { CoreV1Api, V1Container, V1Pod, V1Probe } from "@kubernetes/client-node";
import { containerEnv, expandRefs } from "./env.ts";
import type { ContainerProcess } from "./container-process.ts";
import { execInPod, launch } from "./container-process.ts";
import type { PodNetwork } from "./pod-network.ts";
import { createPodNetwork, deletePodNetwork } from "./pod-network.ts";
import type { Condition, ContainerRecord, PodRecord } from "./pod-status.ts";
import { apiTime, podStatus } from "./pod-status.ts";
import { probeOnce } from "./probes.ts";
import type { ServiceNetwork } from "./service-network.ts";
import { containerMounts, containerPidFile, mountsFileText, podDir, prepareVolumes } from "./volumes.ts";

export interface RunnerDeps {
  core: CoreV1Api;
  clusterDir: string;
  netId: string;
  index: number;
  shimPath: string;
  /** Service names (/etc/hosts) and the apiserver's Service address. */
  services: ServiceNetwork;
  writeStatus(pod: V1Pod, status: Record<string, unknown>): Promise<void>;
  /** Records a kubelet-style Event on the pod (Started, BackOff, Unhealthy, Killing, Failed); never throws. */
  event(pod: V1Pod, type: "Normal" | "Warning", reason: string, message: string): void;
  log(msg: string): void;
}

const terminationLogFile = (dir: string, container: string): string => path.join(dir, `${container}.termination-log`);

/**
 * What a kubelet reports as a terminated container's message: the termination log (at most 4096 bytes), or with
 * terminationMessagePolicy FallbackToLogsOnError and a failed, silent exit, the log's last 80 lines (at most 2048
 * bytes).
 */
function terminationMessage(spec: V1Container, dir: string, exitCode: number): string {
  let text = "";
  try {
    text = fs.readFileSync(terminationLogFile(dir, spec.name)).subarray(0, 4096).toString();
  } catch {
    /* none written */
  }
  if (text === "" && exitCode !== 0 && spec.terminationMessagePolicy === "FallbackToLogsOnError") {
    let log = "";
    try {
      log = fs.readFileSync(path.join(dir, `${spec.name}.log`), "utf8");
    } catch {
      /* no output */
    }
    const tail = log.split("\n").slice(-81).join("\n");
    text = Buffer.from(tail).subarray(-2048).toString();
  }
  return text;
}

type LaunchBase = { mountsFile: string; env: Record<string, string>; workingDir: string; hostname: string };

const BACKOFF_START_MS = Number(process.env.GANTRY_RUNTIME_BACKOFF_SECONDS ?? 1) * 1000;
const BACKOFF_MAX_MS = 30_000,
  BACKOFF_RESET_MS = 60_000,
  CONFIG_RETRY_MS = 1000,
  STATUS_RETRY_MS = 500;
const now = (): string => apiTime(new Date());
const newRecord = (c: V1Container): ContainerRecord => ({
  name: c.name,
  image: c.image ?? "",
  state: { kind: "waiting", reason: "PodInitializing" },
  restartCount: 0,
  ready: false,
  started: false,
});

/** What an image's entrypoint would be: pods without `command` run the Gantry image's entrypoint, `gantry`. */
const argvOf = (c: V1Container): string[] => [...(c.command?.length ? c.command : ["gantry"]), ...(c.args ?? [])];

export class PodRunner {
  private pod: V1Pod;
  private readonly deps: RunnerDeps;
  private readonly rec: PodRecord;
  private net?: PodNetwork;
  private volumes = new Map<string, string>();
  private readonly procs = new Map<string, ContainerProcess>();
  private stopping = false;
  /** Wakes every container sleeping in backoff when the pod is stopped. */
  private readonly wakers = new Set<() => void>();
  private lastConditions: Condition[] = [];
  private lastWritten = "";
  private writing?: Promise<void>;
  private dirty = false;

  constructor(pod: V1Pod, hostIp: string, deps: RunnerDeps) {
    this.pod = pod;
    this.deps = deps;
    this.rec = {
      phase: "Pending",
      hostIp,
      startTime: now(),
      initialized: (pod.spec?.initContainers ?? []).length === 0,
      init: (pod.spec?.initContainers ?? []).map(newRecord),
      containers: pod.spec?.containers.map(newRecord) ?? [],
    };
  }

  get key(): string {
    return `${this.pod.metadata?.namespace}/${this.pod.metadata?.name}`;
  }
  get terminating(): boolean {
    return this.stopping;
  }
  update(pod: V1Pod): void {
    this.pod = pod;
  }

  private get restartPolicy(): string {
    return this.pod.spec?.restartPolicy ?? "Always";
  }

  /** Runs the pod until it ends or is stopped; never throws (failures become pod status). */
  async run(): Promise<void> {
    try {
      this.net = createPodNetwork(this.deps.netId, this.deps.index);
      this.rec.podIp = this.net.podIp;
      this.notify();
      if (!(await this.mountVolumes(this.net.podIp))) return;
      if (!(await this.runInitContainers())) return;
      this.rec.initialized = true;
      const specs = this.pod.spec?.containers ?? [];
      await Promise.all(specs.map((c, i) => this.supervise(c, this.rec.containers[i] as ContainerRecord)));
    } catch (err) {
      this.deps.log(`${this.key}: ${String(err)}`);
      this.rec.message = String(err instanceof Error ? err.message : err);
      this.deps.event(this.pod, "Warning", "Failed", this.rec.message);
      for (const c of [...this.rec.init, ...this.rec.containers]) {
        if (c.state.kind === "waiting")
          c.state = { kind: "waiting", reason: "CreateContainerConfigError", message: this.rec.message };
      }
      this.notify();
    }
  }

  /** Like a kubelet, retries until the volumes' ConfigMaps/Secrets exist (FailedMount events meanwhile). */
  private async mountVolumes(podIp: string): Promise<boolean> {
    while (!this.stopping) {
      try {
        this.volumes = await prepareVolumes(this.deps.core, this.deps.clusterDir, this.pod, podIp);
        return true;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.deps.event(this.pod, "Warning", "FailedMount", message);
        for (const c of [...this.rec.init, ...this.rec.containers])
          c.state = { kind: "waiting", reason: "ContainerCreating", message };
        this.notify();
        await this.sleep(CONFIG_RETRY_MS);
      }
    }
    return false;
  }

  private async runInitContainers(): Promise<boolean> {
    const specs = this.pod.spec?.initContainers ?? [];
    for (const [i, spec] of specs.entries()) {
      const rec = this.rec.init[i] as ContainerRecord;
      let backoff = BACKOFF_START_MS;
      for (;;) {
        const exit = await this.runOnce(spec, rec, false);
        if (this.stopping) return false;
        if (exit === 0) break;
        if (exit === null) {
          await this.sleep(CONFIG_RETRY_MS);
          continue;
        }
        if (this.restartPolicy === "Never") {
          this.rec.phase = "Failed";
          this.notify();
          return false;
        }
        backoff = await this.backOff(rec, backoff);
        if (this.stopping) return false;
      }
    }
    return true;
  }

  private async supervise(spec: V1Container, rec: ContainerRecord): Promise<void> {
    let backoff = BACKOFF_START_MS;
    for (;;) {
      const started = Date.now();
      const exit = await this.runOnce(spec, rec, true);
      if (this.stopping) return;
      if (exit === null) {
        await this.sleep(CONFIG_RETRY_MS);
        continue;
      }
      const policy = this.restartPolicy;
      if (policy === "Never" || (policy === "OnFailure" && exit === 0)) {
        this.settlePhase();
        return;
      }
      if (Date.now() - started > BACKOFF_RESET_MS) backoff = BACKOFF_START_MS;
      backoff = await this.backOff(rec, backoff);
      if (this.stopping) return;
    }
  }

  /** Once no container will run again: Succeeded when all exited 0, else Failed. */
  private settlePhase(): void {
    const done = this.rec.containers.every((c) => c.state.kind === "terminated");
    if (!done) return;
    this.rec.phase = this.rec.containers.every((c) => c.state.kind === "terminated" && c.state.exitCode === 0)
      ? "Succeeded"
      : "Failed";
    this.notify();
  }

  private async backOff(rec: ContainerRecord, backoffMs: number): Promise<number> {
    rec.lastState = rec.state;
    const message = `back-off ${Math.round(backoffMs / 1000)}s restarting failed container=${rec.name} pod=${this.pod.metadata?.name}`;
    rec.state = { kind: "waiting", reason: "CrashLoopBackOff", message };
    this.deps.event(this.pod, "Warning", "BackOff", message);
    this.notify();
    await this.sleep(backoffMs);
    if (!this.stopping) rec.restartCount++;
    return Math.min(backoffMs * 2, BACKOFF_MAX_MS);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(t);
        this.wakers.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private async launchSpec(spec: V1Container): Promise<LaunchBase> {
    const dir = podDir(this.deps.clusterDir, this.pod);
    fs.mkdirSync(dir, { recursive: true });
    // Written atomically: a container (re)starting must never read a half-written file and run without its mounts.
    const mountsFile = path.join(dir, `${spec.name}.mounts`);
    // The termination message file, as a kubelet mounts it at terminationMessagePath (default /dev/termination-log).
    fs.writeFileSync(terminationLogFile(dir, spec.name), "");
    const terminationLog = {
      source: terminationLogFile(dir, spec.name),
      target: spec.terminationMessagePath ?? "/dev/termination-log",
      readOnly: false,
    };
    // /etc/hosts names the cluster's Services (a kubelet manages this file too; cluster DNS is not implemented).
    const hosts = {
      source: this.deps.services.addPod(this.key, path.join(dir, "hosts"), {
        namespace: this.pod.metadata?.namespace ?? "default",
        ip: this.rec.podIp ?? "",
        hostname: this.pod.spec?.hostname ?? this.pod.metadata?.name ?? "pod",
      }),
      target: "/etc/hosts",
      readOnly: true,
    };
    fs.writeFileSync(
      `${mountsFile}.tmp`,
      mountsFileText([...containerMounts(spec, this.volumes), terminationLog, hosts]),
    );
    fs.renameSync(`${mountsFile}.tmp`, mountsFile);
    const ns = this.pod.metadata?.namespace ?? "default";
    const data = {
      configMap: async (name: string) =>
        (await this.deps.core.readNamespacedConfigMap({ name, namespace: ns }).catch(() => undefined))?.data ??
        undefined,
      secret: async (name: string) => {
        const s = await this.deps.core.readNamespacedSecret({ name, namespace: ns }).catch(() => undefined);
        return s
          ? Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]))
          : undefined;
      },
    };
    const base = {
      PATH: `${this.deps.shimPath}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
      HOME: "/root",
      HOSTNAME: this.pod.metadata?.name ?? "",
      // What a kubelet sets from the default/kubernetes Service: in-cluster clients find the apiserver by these.
      ...this.deps.services.kubernetesEnv(),
    };
    const env = await containerEnv(spec, this.pod, this.rec.podIp ?? "", data, base);
    return {
      mountsFile,
      env,
      workingDir: spec.workingDir ?? "/",
      hostname: this.pod.spec?.hostname ?? this.pod.metadata?.name ?? "pod",
    };
  }

  /**
   * Starts the container once and resolves with its exit code when it ends, or null when it could not be configured
   * (a missing ConfigMap/Secret key: CreateContainerConfigError, retried by the caller as a kubelet does).
   */
  private async runOnce(spec: V1Container, rec: ContainerRecord, probes: boolean): Promise<number | null> {
    const net = this.net as PodNetwork;
    let ls: LaunchBase;
    try {
      ls = await this.launchSpec(spec);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (rec.state.kind !== "waiting" || rec.state.reason !== "CreateContainerConfigError")
        this.deps.event(this.pod, "Warning", "Failed", message);
      rec.state = { kind: "waiting", reason: "CreateContainerConfigError", message };
      this.notify();
      return null;
    }
    const argv = argvOf(spec).map((a) => expandRefs(a, ls.env));
    if (this.stopping) return 0;
    const logFile = path.join(podDir(this.deps.clusterDir, this.pod), `${spec.name}.log`);
    const startedAt = now();
    const proc = launch({ netns: net.netns, ...ls, argv, logFile });
    this.procs.set(spec.name, proc);
    fs.writeFileSync(containerPidFile(this.deps.clusterDir, this.pod, spec.name), String(proc.pid));
    rec.state = { kind: "running", startedAt };
    rec.started = true;
    rec.ready = probes && !spec.readinessProbe;
    if (probes) this.rec.phase = "Running";
    this.deps.event(this.pod, "Normal", "Started", `Started container ${spec.name}`);
    this.notify();
    let alive = true;
    if (probes && spec.readinessProbe) {
      void this.probeLoop(
        spec,
        ls,
        spec.readinessProbe,
        () => alive,
        (ok, why) => {
          if (!ok) this.deps.event(this.pod, "Warning", "Unhealthy", `Readiness probe failed: ${why}`);
          rec.ready = ok;
          this.notify();
        },
      );
    }
    if (probes && spec.livenessProbe) {
      void this.probeLoop(
        spec,
        ls,
        spec.livenessProbe,
        () => alive,
        (ok, why) => {
          if (ok) return;
          this.deps.event(
            this.pod,
            "Normal",
            "Killing",
            `Container ${spec.name} failed liveness probe (${why}), will be restarted`,
          );
          proc.signal("SIGKILL");
        },
      );
    }
    const exit = await proc.exited;
    alive = false;
    this.procs.delete(spec.name);
    rec.ready = false;
    rec.started = false;
    const message = terminationMessage(spec, path.dirname(logFile), exit.exitCode);
    rec.state = {
      kind: "terminated",
      exitCode: exit.exitCode,
      reason: exit.exitCode === 0 ? "Completed" : "Error",
      startedAt,
      finishedAt: now(),
      ...(message ? { message } : {}),
    };
    this.notify();
    return exit.exitCode;
  }

  /** Calls onChange(true/false) when the probe crosses its success/failure threshold; stops when alive() is false. */
  private async probeLoop(
    spec: V1Container,
    ls: LaunchBase,
    probe: V1Probe,
    alive: () => boolean,
    onChange: (ok: boolean, why: string) => void,
  ): Promise<void> {
    const period = (probe.periodSeconds ?? 10) * 1000;
    let state: boolean | undefined,
      ok = 0,
      bad = 0;
    await new Promise((r) => setTimeout(r, (probe.initialDelaySeconds ?? 0) * 1000));
    while (alive() && !this.stopping) {
      const result = await probeOnce(probe, {
        podIp: this.rec.podIp ?? "",
        container: spec,
        exec: (command, timeoutMs) => execInPod({ netns: this.net?.netns ?? "", ...ls, argv: command }, timeoutMs),
      });
      if (!alive()) return;
      const success = result === true;
      if (success) {
        ok++;
        bad = 0;
      } else {
        bad++;
        ok = 0;
      }
      if (success && ok >= (probe.successThreshold ?? 1) && state !== true) {
        state = true;
        this.deps.log(`${this.key}/${spec.name}: probe succeeded`);
        onChange(true, "");
      }
      if (!success && bad >= (probe.failureThreshold ?? 3) && state !== false) {
        state = false;
        this.deps.log(`${this.key}/${spec.name}: probe failed: ${result}`);
        onChange(false, result);
      }
      await new Promise((r) => setTimeout(r, period));
    }
  }

  /** Graceful stop: SIGTERM, up to graceSeconds, SIGKILL; then the pod network and per-pod volumes go away. */
  async terminate(graceSeconds: number): Promise<void> {
    this.stopping = true;
    for (const wake of [...this.wakers]) wake();
    const running = [...this.procs.values()];
    for (const name of this.procs.keys()) this.deps.event(this.pod, "Normal", "Killing", `Stopping container ${name}`);
    for (const p of running) p.signal("SIGTERM");
    const all = Promise.all(running.map((p) => p.exited));
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceSeconds * 1000)),
    ]);
    if (timedOut) for (const p of running) p.signal("SIGKILL");
    await all;
    this.deps.services.removePod(this.key);
    if (this.net) deletePodNetwork(this.net);
    fs.rmSync(path.join(podDir(this.deps.clusterDir, this.pod), "volumes"), { recursive: true, force: true });
  }

  /** Coalesces status writes: at most one in flight, and only when the status changed. */
  /** A pod being stopped reports nothing more, unless it failed. */
  private get silenced(): boolean {
    return this.stopping && this.rec.phase !== "Failed";
  }

  private notify(): void {
    if (this.silenced) return;
    this.dirty = true;
    if (this.writing) return;
    // Cleared in finally, never inside flush: a flush that finds nothing to write finishes synchronously, and clearing
    // there would happen before this assignment, leaving `writing` set for good and every later status unwritten.
    this.writing = this.flushStatus().finally(() => {
      this.writing = undefined;
      if (this.dirty) this.notify();
    });
  }

  private async flushStatus(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      const status = podStatus(this.rec, this.lastConditions, now());
      const text = JSON.stringify(status);
      if (text === this.lastWritten) continue;
      try {
        await this.deps.writeStatus(this.pod, status);
        this.lastWritten = text;
        this.lastConditions = status.conditions as Condition[];
      } catch (err) {
        // Like a kubelet's status manager, keep trying: a lost write (an apiserver busy under a whole test run) would
        // otherwise leave the pod's last status, e.g. Ready, unwritten for good when nothing else changes.
        this.deps.log(`${this.key}: status write failed: ${String(err)}; retrying`);
        if (this.silenced) return;
        this.dirty = true;
        await new Promise((r) => setTimeout(r, STATUS_RETRY_MS));
      }
    }
  }
}
