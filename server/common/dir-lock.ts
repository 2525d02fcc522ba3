// A cross-process lock: a directory created with mkdir (atomic), holding its owner's pid. A lock whose owner died, or
// that never got a pid within 10 s (its creator crashed in between), is taken over: removed by whoever first creates
// <lock>.break, which re-checks it there, so a lock another waiter has just taken over is never removed. The setup's
// shell steps use the same protocol (server/setup/dir-lock.sh).
import fs from "node:fs";
import path from "node:path";

/** True while the lock's owner lives (or the lock is too new to have its pid written yet). */
export function lockHeld(lockDir: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(lockDir, "pid"), "utf8"));
  } catch {
    // Just created (pid not written yet) or left by a crash before writing it.
    try {
      return Date.now() - fs.statSync(lockDir).mtimeMs < 10_000;
    } catch {
      return false;
    }
  }
  return isRunning(pid);
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
 * The lock exists and is dead: its owner's pid is not running, or it got no pid within 10 s. (An absent lock is not
 * stale: a waiter may be creating it right now.)
 */
function isStale(lockDir: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(lockDir, "pid"), "utf8"));
  } catch {
    try {
      return Date.now() - fs.statSync(lockDir).mtimeMs >= 10_000;
    } catch {
      return false;
    }
  }
  return !isRunning(pid);
}

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
  opts: { pollMs?: number; onWait?: () => void } = {},
): Promise<T> {
  fs.mkdirSync(path.dirname(lockDir), { recursive: true });
  let waited = false;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
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
  try {
    return await fn();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}
