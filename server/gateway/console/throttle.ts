// Failed sign-ins per client address: the first few are free, then every further attempt from that address waits
// 1, 2, 4 ... up to 60 s after the last failure (429 with Retry-After), so guessing keys from one address is slow
// (a key is 256 random bits: this is about not letting anyone hammer the key store, not about entropy).
// Entries are forgotten 15 minutes after the last failure; at most MAX_ADDRESSES are kept.

const FORGET_MS = 15 * 60_000;
const MAX_WAIT_MS = 60_000;
const MAX_ADDRESSES = 10_000;

export class SignInThrottle {
  private readonly failures = new Map<string, { count: number; last: number }>();
  private readonly free: number;

  constructor(freeFailures: number) {
    this.free = freeFailures;
  }

  /** Milliseconds the address must still wait before its next attempt (0: it may try now). */
  waitMs(address: string, now: number): number {
    const f = this.failures.get(address);
    if (!f) return 0;
    if (now - f.last >= FORGET_MS) {
      this.failures.delete(address);
      return 0;
    }
    if (f.count < this.free) return 0;
    const wait = Math.min(MAX_WAIT_MS, 1000 * 2 ** (f.count - this.free));
    return Math.max(0, f.last + wait - now);
  }

  failed(address: string, now: number): void {
    const f = this.failures.get(address);
    if (f && now - f.last < FORGET_MS) {
      f.count++;
      f.last = now;
      return;
    }
    if (this.failures.size >= MAX_ADDRESSES) this.prune(now);
    this.failures.set(address, { count: 1, last: now });
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }

  private prune(now: number): void {
    for (const [a, f] of this.failures) if (now - f.last >= FORGET_MS) this.failures.delete(a);
    // Still full: the oldest go (a Map iterates in insertion order).
    for (const a of this.failures.keys()) {
      if (this.failures.size < MAX_ADDRESSES) break;
      this.failures.delete(a);
    }
  }
}
