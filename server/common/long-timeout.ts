// A timeout of any length. Node's setTimeout takes at most 2^31 - 1 ms (about 24.8 days) and fires at once for more
// (with a TimeoutOverflowWarning): a model kept for "720h" would be unloaded immediately.

/** The longest delay a Node timer takes. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimeout {
  clear(): void;
}

/** Calls `fn` after `ms` milliseconds, re-arming in steps Node can take; unref'd (it never keeps the process alive). */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  const at = Date.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const left = at - Date.now();
    timer = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
    timer.unref();
  };
  arm();
  return { clear: () => clearTimeout(timer) };
}
