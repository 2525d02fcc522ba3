// Long-lived processes of a test control plane: started detached, recorded in <dir>/pids, and stopped by exactly those
// recorded ids (never by name), so several clusters or unrelated processes on the machine are never touched.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

export interface RecordedProcess {
  pid: number;
  name: string;
}

const pidsFile = (dir: string): string => path.join(dir, "pids");
/** How each process was started, so a fault test can restart one as it was (restartRecorded). */
const commandFile = (dir: string, name: string): string => path.join(dir, "commands", `${name}.json`);
export const logsDir = (dir: string): string => path.join(dir, "logs");

/** Starts `bin args` detached (it outlives the caller), output to <dir>/logs/<name>.log, and records its pid. */
export function startRecorded(dir: string, name: string, bin: string, args: string[], env?: NodeJS.ProcessEnv): number {
  fs.mkdirSync(logsDir(dir), { recursive: true });
  const out = fs.openSync(path.join(logsDir(dir), `${name}.log`), "a");
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", out, out], env: env ?? process.env });
  fs.closeSync(out);
  if (child.pid === undefined) throw new Error(`could not start ${name} (${bin})`);
  child.unref();
  fs.appendFileSync(pidsFile(dir), `${child.pid} ${name}\n`);
  fs.mkdirSync(path.dirname(commandFile(dir, name)), { recursive: true });
  fs.writeFileSync(commandFile(dir, name), JSON.stringify({ bin, args, ...(env ? { env } : {}) }));
  return child.pid;
}

/**
 * Stops one recorded process (SIGKILL: a crash, or SIGTERM) and starts it again with the same command, its pid line
 * replaced, so the cluster stays healthy in the record. For fault tests (the API server restarted mid-reconcile).
 */
export async function restartRecorded(dir: string, name: string, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  const proc = readRecorded(dir).find((p) => p.name === name);
  if (!proc) throw new Error(`no recorded process ${name} in ${dir}`);
  const started = isOurs(proc.pid, dir) ? startTime(proc.pid) : undefined;
  if (started !== undefined) process.kill(proc.pid, signal);
  const deadline = Date.now() + 30_000;
  // Not isOurs: a dying process's cmdline reads empty once its memory is gone, before its sockets close.
  while (started !== undefined && running(proc.pid, started)) {
    if (Date.now() > deadline) throw new Error(`${name} (pid ${proc.pid}) did not exit after ${signal}`);
    await sleep(50);
  }
  const cmd = JSON.parse(fs.readFileSync(commandFile(dir, name), "utf8")) as {
    bin: string;
    args: string[];
    env?: NodeJS.ProcessEnv;
  };
  // And the port it listens on is free again, whatever still held it: the new process must not fail to bind it.
  for (const port of cmd.args.flatMap((a) => /^--(?:secure-)?port=(\d+)$/.exec(a)?.[1] ?? []).map(Number))
    while (!(await canListen(port))) {
      if (Date.now() > deadline) throw new Error(`${name}'s port ${port} still taken after ${signal}`);
      await sleep(50);
    }
  const others = readRecorded(dir).filter((p) => p.name !== name);
  fs.writeFileSync(pidsFile(dir), others.map((p) => `${p.pid} ${p.name}\n`).join(""));
  startRecorded(dir, name, cmd.bin, cmd.args, cmd.env);
}

export function readRecorded(dir: string): RecordedProcess[] {
  if (!fs.existsSync(pidsFile(dir))) return [];
  return fs
    .readFileSync(pidsFile(dir), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [pid, name] = line.split(" ");
      return { pid: Number(pid), name: name ?? "?" };
    });
}

/** A process's (or with `tid`, one of its threads') state letter and start time (clock ticks since boot). */
function procStat(pid: number, tid?: number): { state: string; start: string } | undefined {
  try {
    const stat = fs.readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0] ?? "", start: fields[19] ?? "" };
  } catch {
    return undefined;
  }
}

const startTime = (pid: number): string | undefined => procStat(pid)?.start;

/**
 * Until the kernel has released everything of it, and not a later process on that pid. A killed Go program's main
 * thread turns zombie while its other threads are still exiting, and they hold its sockets: every thread must be gone
 * or a zombie (the restarted API server failed "address already in use" when only the main thread was checked).
 */
function running(pid: number, started: string): boolean {
  const stat = procStat(pid);
  if (stat === undefined || stat.start !== started) return false;
  let tids: number[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return false;
  }
  return tids.some((tid) => {
    const t = procStat(pid, tid);
    return t !== undefined && t.state !== "Z" && t.state !== "X";
  });
}

/** True when the pid is alive AND still the process we started: its command line names the cluster dir. */
export function isOurs(pid: number, dir: string): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    if (/\) Z /.test(stat)) return false;
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir);
  } catch {
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SIGTERM each recorded process, newest first; SIGKILL after graceMs. Returns the names that had to be killed. */
export async function stopRecorded(dir: string, graceMs = 8000): Promise<string[]> {
  const killed: string[] = [];
  for (const p of readRecorded(dir).reverse()) {
    if (!isOurs(p.pid, dir)) continue;
    process.kill(p.pid, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (isOurs(p.pid, dir) && Date.now() < deadline) await sleep(100);
    if (isOurs(p.pid, dir)) {
      process.kill(p.pid, "SIGKILL");
      killed.push(p.name);
    }
  }
  return killed;
}

/** The kernel's ephemeral port range (outgoing connections' local ports); Linux's default when unreadable. */
export function ephemeralPortRange(): [number, number] {
  try {
    const [low, high] = fs
      .readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * A free port below the ephemeral range. A control plane's ports must stay free while its process restarts: inside the
 * range, an outgoing connection (or a client retrying against the dead port, by TCP self-connect) can take the port in
 * that gap, and the restarted API server then fails with "address already in use" (seen in a fleet fault test).
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = ephemeralPortRange();
  const low = 10_000;
  const high = Math.min(ephemeralLow, 65_536) - 1;
  if (high - low < 1_000) return anyPort();
  for (let i = 0; i < 200; i++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await canListen(port)) return port;
  }
  return anyPort();
}

function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function tailLogs(dir: string, lines = 25): string {
  if (!fs.existsSync(logsDir(dir))) return "";
  return fs
    .readdirSync(logsDir(dir))
    .map((f) => {
      const text = fs
        .readFileSync(path.join(logsDir(dir), f), "utf8")
        .split("\n")
        .slice(-lines)
        .join("\n");
      return `--- ${f}\n${text}`;
    })
    .join("\n");
}

/** Polls check() until true; on timeout throws with the tail of every log so the failing component is visible. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  dir: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; logs in ${logsDir(dir)}\n${tailLogs(dir)}`);
}
