// Pod status as a kubelet writes it, computed from the runtime's record of a pod. Pure (the clock is a parameter).
// Times are RFC 3339 strings at second precision, as the API stores them, so a status can be compared with the last
// one written and sent as a JSON merge patch without client-side Date serialization.
type Json = Record<string, unknown>;
export interface Condition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
}

/** RFC 3339 at second precision. */
export const apiTime = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, "Z");

export type ContainerState =
  | { kind: "waiting"; reason: string; message?: string }
  | { kind: "running"; startedAt: string }
  | {
      kind: "terminated";
      exitCode: number;
      reason: string;
      startedAt: string;
      finishedAt: string;
      signal?: number;
      message?: string;
    };

export interface ContainerRecord {
  name: string;
  image: string;
  state: ContainerState;
  lastState?: ContainerState;
  restartCount: number;
  ready: boolean;
  started: boolean;
}

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed";

export interface PodRecord {
  phase: PodPhase;
  hostIp: string;
  podIp?: string;
  startTime: string;
  initialized: boolean;
  init: ContainerRecord[];
  containers: ContainerRecord[];
  message?: string;
}

export function containerState(s: ContainerState): Json {
  switch (s.kind) {
    case "waiting":
      return { waiting: { reason: s.reason, ...(s.message ? { message: s.message } : {}) } };
    case "running":
      return { running: { startedAt: s.startedAt } };
    case "terminated":
      return {
        terminated: {
          exitCode: s.exitCode,
          reason: s.reason,
          startedAt: s.startedAt,
          finishedAt: s.finishedAt,
          ...(s.signal ? { signal: s.signal } : {}),
          ...(s.message ? { message: s.message } : {}),
        },
      };
  }
}

function containerStatus(c: ContainerRecord): Json {
  return {
    name: c.name,
    image: c.image,
    imageID: "",
    containerID: `process://${c.name}-${c.restartCount}`,
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state: containerState(c.state),
    lastState: c.lastState ? containerState(c.lastState) : {},
  };
}

/** Keeps lastTransitionTime from the previous conditions when a condition's status did not change. */
function conditions(rec: PodRecord, previous: Condition[], now: string): Condition[] {
  const containersReady = rec.containers.length > 0 && rec.containers.every((c) => c.ready);
  const wanted: [string, boolean, string?][] = [
    ["PodReadyToStartContainers", rec.podIp !== undefined],
    ["Initialized", rec.initialized, rec.initialized ? undefined : "ContainersNotInitialized"],
    ["Ready", containersReady, containersReady ? undefined : "ContainersNotReady"],
    ["ContainersReady", containersReady, containersReady ? undefined : "ContainersNotReady"],
    ["PodScheduled", true],
  ];
  return wanted.map(([type, ok, reason]) => {
    const status = ok ? "True" : "False";
    const prev = previous.find((c) => c.type === type);
    const lastTransitionTime =
      prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : now;
    return { type, status, lastTransitionTime, ...(reason ? { reason } : {}) };
  });
}

export function podStatus(rec: PodRecord, previousConditions: Condition[], now: string): Json {
  return {
    phase: rec.phase,
    hostIP: rec.hostIp,
    hostIPs: [{ ip: rec.hostIp }],
    ...(rec.podIp ? { podIP: rec.podIp, podIPs: [{ ip: rec.podIp }] } : {}),
    startTime: rec.startTime,
    conditions: conditions(rec, previousConditions, now),
    initContainerStatuses: rec.init.map(containerStatus),
    containerStatuses: rec.containers.map(containerStatus),
    ...(rec.message ? { message: rec.message } : {}),
  };
}
