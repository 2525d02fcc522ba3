// A cross-process lock: a directory created with mkdir (atomic), holding its owner's pid and host name. A lock whose
// owner died, or that never got a pid within 10 s (its creator crashed in between), is taken over: removed by whoever
// first creates <lock>.break, which re-checks it there, so a lock another waiter has just taken over is never removed.
// The setup's shell steps use the same protocol (server/setup/dir-lock.sh; they write no host: they are local).
//
// An owner on another host (another pod sharing a model volume: its pids mean nothing here) is alive while it keeps
// its pid file fresh: a Node holder touches it every HEARTBEAT_MS, and one not touched for STALE_MS is dead.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const HEARTBEAT_MS = 5_000;
const STALE_MS = 30_000;
/** How long a lock without a pid yet counts as being created. */
const NO_PID_MS = 10_000;

/** Whether the lock's owner lives, judged from here; "creating" while it has no pid yet (for up to NO_PID_MS). */
function owner(lockDir: string): "alive" | "dead" | "creating" | "absent" {
  const pidFile = path.join(lockDir, "pid");
  let pid: number, touched: number;
  try {
    pid = Number(fs.readFileSync(pidFile, "utf8"));
    touched = fs.statSync(pidFile).mtimeMs;
  } catch {
    // Just created (pid not written yet), left by a crash before writing it, or gone.
    try {
      return Date.now() - fs.statSync(lockDir).mtimeMs < NO_PID_MS ? "creating" : "dead";
    } catch {
      return "absent";
    }
  }
  let host: string | undefined;
  try {
    host = fs.readFileSync(path.join(lockDir, "host"), "utf8");
  } catch {
    host = undefined; // a shell holder, or one that has not written it yet: this host
  }
  if (host !== undefined && host !== os.hostname()) return Date.now() - touched < STALE_MS ? "alive" : "dead";
  return isRunning(pid) ? "alive" : "dead";
}

/** True while the lock's owner lives (or the lock is too new to have its pid written yet). */
export function lockHeld(lockDir: string): boolean {
  const o = owner(lockDir);
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
 * The lock exists and is dead: its owner is gone, or it got no pid in time. (An absent lock is not stale: a waiter may
 * be creating it right now.)
 */
const isStale = (lockDir: string): boolean => owner(lockDir) === "dead";

/**
 * Removes a dead owner's lock under `<lockDir>.break` (a stale lock only goes away through a breaker, so it is still
 * the stale one when removed); false while another process is breaking it.
 */
function breakLock(lockDir: string): boolean {
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
    if (isStale(lockDir)) fs.rmSync(lockDir, { recursive: true, force: true });
  } finally {
    fs.rmdirSync(breaker);
  }
  return true;
}

/** Runs `fn` holding `lockDir`; while another live process holds it, polls every `pollMs` (calling `onWait` once). */
export async function withDirLock<T>(
  lockDir: string,
  fn: () => Promise<T>,
  opts: { pollMs?: number; onWait?: () => void; heartbeatMs?: number } = {},
): Promise<T> {
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  let waited = false;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, "host"), os.hostname());
      fs.writeFileSync(path.join(lockDir, "pid"), String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      if (!lockHeld(lockDir) && breakLock(lockDir)) continue;
      if (!waited) {
        opts.onWait?.();
        waited = true;
      }
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  }
  const pidFile = path.join(lockDir, "pid");
  const heartbeat = setInterval(() => {
    const now = new Date();
    try {
      fs.utimesSync(pidFile, now, now);
    } catch {
      // the lock was removed under us (its directory deleted by hand): nothing to keep fresh
    }
  }, opts.heartbeatMs ?? HEARTBEAT_MS);
  heartbeat.unref();
  try {
    return await fn();
  } finally {
    clearInterval(heartbeat);
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}
