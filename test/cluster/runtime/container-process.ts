// Starting one container as a local process: inside the pod's network namespace, in private mount and UTS namespaces
// with
// the container's volume mounts (container-exec.sh), with its environment, and with stdout+stderr appended to its log.
import { spawn, execFileSync } from "node:child_process";
import { constants } from "node:os";
import fs from "node:fs";
import path from "node:path";

const EXEC_SH = path.join(import.meta.dirname, "container-exec.sh");
const which = (cmd: string): string => execFileSync("bash", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).trim();
const tools = { ip: which("ip"), unshare: which("unshare") };

export interface ProcessExit {
  exitCode: number;
  signal?: string;
}
export interface ContainerProcess {
  pid: number;
  exited: Promise<ProcessExit>;
  signal(sig: NodeJS.Signals): void;
}

export interface LaunchSpec {
  netns: string;
  mountsFile: string;
  workingDir: string;
  hostname: string;
  argv: string[];
  env: Record<string, string>;
  logFile: string;
}

const wrapperArgs = (spec: Omit<LaunchSpec, "logFile">): string[] => [
  "netns",
  "exec",
  spec.netns,
  tools.unshare,
  "--mount",
  "--uts",
  "--propagation",
  "private",
  EXEC_SH,
  spec.mountsFile,
  spec.workingDir,
  spec.hostname,
  ...spec.argv,
];

/** Exit code as a kubelet reports it: the process's own, or 128 + signal number when a signal ended it. */
const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number =>
  code ?? 128 + (signal ? constants.signals[signal] : 0);

export function launch(spec: LaunchSpec): ContainerProcess {
  fs.mkdirSync(path.dirname(spec.logFile), { recursive: true });
  const out = fs.openSync(spec.logFile, "a");
  // Its own process group (the wrappers exec, so the group id is the container's pid): signals reach the processes
  // it started too, and whatever it left behind is killed when it exits, as a kubelet does through the cgroup.
  const child = spawn(tools.ip, wrapperArgs(spec), { env: spec.env, stdio: ["ignore", out, out], detached: true });
  fs.closeSync(out);
  const pid = child.pid ?? -1;
  const signalGroup = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* already gone */
    }
  };
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once("error", () => resolve({ exitCode: 128 }));
    child.once("exit", (code, signal) => {
      signalGroup("SIGKILL");
      resolve({ exitCode: exitCodeOf(code, signal), ...(signal ? { signal } : {}) });
    });
  });
  return { pid, exited, signal: signalGroup };
}

/** Runs a command to completion inside the pod (exec probes). Resolves to its exit code; kills it on timeout. */
export async function execInPod(spec: Omit<LaunchSpec, "logFile">, timeoutMs: number): Promise<number> {
  const child = spawn(tools.ip, wrapperArgs(spec), { env: spec.env, stdio: "ignore" });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise<number>((resolve) => {
    child.once("error", () => resolve(128));
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(exitCodeOf(code, signal));
    });
  });
}
