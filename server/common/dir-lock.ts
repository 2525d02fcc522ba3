// A cross-process lock: a directory created with mkdir (atomic), holding its owner's pid. A lock whose owner died, or
// that never got a pid within 10 s (its creator crashed in between), is taken over: removed by whoever first creates
// <lock>.break, which re-checks it there, so a lock another waiter has just taken over is never removed. The setup's
// shell steps use the same protocol (server/setup/dir-lock.sh).
//
// Across hosts (`acrossHosts`: pods sharing a volume, where another pod's pid means nothing, and a container restarted
// in place may even get its dead predecessor's pid), the holder also writes its host and a token, and keeps touching
// its pid file: a waiter takes the lock over once it has seen that file unchanged for STALE_MS by its own clock (no
// clock is compared across hosts), or at once when the holder was on this host and its pid is gone. A holder removes
// the lock only while it still holds its token, so a holder wrongly taken over never removes its successor's lock.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const HEARTBEAT_MS = 5_000;
const STALE_MS = 30_000;
/** How long a lock without a pid yet counts as being created. */
const NO_PID_MS = 10_000;

/** The pid file's mtime, or undefined without one. */
function touched(lockDir: string): number | undefined {
  try {
    return fs.statSync(path.join(lockDir, "pid")).mtimeMs;
  } catch {
    return undefined;
  }
}

const read = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/**
 * Whether the lock's owner lives, as far as a pid on this host tells: "creating" while it has no pid yet (up to
 * NO_PID_MS), "remote" when its pid is another host's (only its heartbeat tells).
 */
function owner(lockDir: string): "alive" | "dead" | "creating" | "absent" | "remote" {
  const pid = read(path.join(lockDir, "pid"));
  if (pid === undefined || pid === "") {
    // Just created (pid not written yet), left by a crash before writing it, or gone.
    try {
      return Date.now() - fs.statSync(lockDir).mtimeMs < NO_PID_MS ? "creating" : "dead";
    } catch {
      return "absent";
    }
  }
  const host = read(path.join(lockDir, "host"));
  if (host !== undefined && host !== os.hostname()) return "remote";
  return isRunning(Number(pid)) ? "alive" : "dead";
}

/** True while the lock's owner lives (or the lock is too new to have its pid written yet). */
export function lockHeld(lockDir: string): boolean {
  const o = owner(lockDir);
  if (o === "remote") return Date.now() - (touched(lockDir) ?? 0) < STALE_MS;
  return o === "alive" || o === "creating";
}

/** Signal 0 checks that a process exists; EPERM means it does (another user's). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A waiter's view of a lock's liveness over its polls: a heartbeat lock is dead once its pid file has not changed for
 * STALE_MS of this waiter's time, or once its local owner's pid is gone.
 */
class Watch {
  private seen: number | undefined;
  private since = Date.now();
  private readonly lockDir: string;
  private readonly staleMs: number;

  constructor(lockDir: string, staleMs: number) {
    this.lockDir = lockDir;
    this.staleMs = staleMs;
  }

  /** Whether the lock is dead now; `recheck`: judge again without taking a new heartbeat as a new start. */
  dead(recheck = false): boolean {
    const o = owner(this.lockDir);
    if (o === "dead") return true;
    const heartbeat = fs.existsSync(path.join(this.lockDir, "token"));
    if (o === "absent" || o === "creating" || (o === "alive" && !heartbeat)) return false;
    // A heartbeat holder (remote, or here with a pid that runs, which may be a restarted container's own pid).
    const t = touched(this.lockDir);
    if (t !== this.seen) {
      if (recheck) return false; // touched (or taken over) since it was judged dead
      this.seen = t;
      this.since = Date.now();
      return false;
    }
    return Date.now() - this.since >= this.staleMs;
  }
}

/**
 * Removes a dead owner's lock under `<lockDir>.break` (a stale lock only goes away through a breaker, so it is still
 * the stale one when removed); false while another process is breaking it.
 */
function breakLock(lockDir: string, stillDead: () => boolean): boolean {
  const breaker = `${lockDir}.break`;
  try {
    fs.mkdirSync(breaker);
  } catch {
    // A breaker that crashed in the few milliseconds it holds this leaves it behind.
    try {
      if (Date.now() - fs.statSync(breaker).mtimeMs >= 10_000) fs.rmdirSync(breaker);
    } catch {
      // gone meanwhile
    }
    return false;
  }
  try {
    if (stillDead()) fs.rmSync(lockDir, { recursive: true, force: true });
  } finally {
    fs.rmdirSync(breaker);
  }
  return true;
}

/** Locks this process holds across hosts, with their tokens (releaseHeldLocks). */
const held = new Map<string, string>();

/** Removes the lock if this holder's token is still in it. */
function release(lockDir: string, token: string | undefined): void {
  if (token === undefined || read(path.join(lockDir, "token")) === token)
    fs.rmSync(lockDir, { recursive: true, force: true });
  held.delete(lockDir);
}

/** Gives up every cross-host lock this process holds (on SIGTERM, so that waiters need not wait out the heartbeat). */
export function releaseHeldLocks(): void {
  for (const [lockDir, token] of [...held]) release(lockDir, token);
}

/**
 * Runs `fn` holding `lockDir`; while another live process holds it, polls every `pollMs` (calling `onWait` once).
 * `acrossHosts`: the lock may be shared with other hosts (see the top of this file).
 */
export async function withDirLock<T>(
  lockDir: string,
  fn: () => Promise<T>,
  opts: { pollMs?: number; onWait?: () => void; acrossHosts?: boolean; heartbeatMs?: number; staleMs?: number } = {},
): Promise<T> {
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  const token = opts.acrossHosts ? crypto.randomBytes(16).toString("hex") : undefined;
  let waited = false;
  let watch: Watch | undefined;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      if (token) {
        fs.writeFileSync(path.join(lockDir, "host"), os.hostname());
        fs.writeFileSync(path.join(lockDir, "token"), token);
      }
      fs.writeFileSync(path.join(lockDir, "pid"), String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      watch ??= new Watch(lockDir, opts.staleMs ?? STALE_MS);
      const w = watch;
      if (w.dead() && breakLock(lockDir, () => w.dead(true))) {
        watch = undefined;
        continue;
      }
      if (!waited) {
        opts.onWait?.();
        waited = true;
      }
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }
  let heartbeat: NodeJS.Timeout | undefined;
  if (token) {
    held.set(lockDir, token);
    const pidFile = path.join(lockDir, "pid");
    heartbeat = setInterval(() => {
      const now = new Date();
      try {
        fs.utimesSync(pidFile, now, now);
      } catch {
        // the lock was removed under us (its directory deleted by hand): nothing to keep fresh
      }
    }, opts.heartbeatMs ?? HEARTBEAT_MS);
    heartbeat.unref();
  }
  try {
    return await fn();
  } finally {
    clearInterval(heartbeat);
    release(lockDir, token);
  }
}
