// A cross-process lock: a directory created with mkdir (atomic), holding its owner's pid. A lock whose owner died, or
// that never got a pid within 10 s (its creator crashed in between), is taken over.
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
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
    } catch {
      if (!lockHeld(lockDir)) {
        fs.rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
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
