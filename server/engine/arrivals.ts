// Burst admission: requests that will generate announce themselves as soon as the HTTP server has received them, and
// a generation about to queue its prompt first waits (briefly) for the announced ones still on their way through
// parsing, model lookup and templating. A burst of simultaneous requests is then prefilled in one decode step: without
// this the first request's prompt is decoded alone while the others are still being parsed (its decode also takes
// the CPU they need), and they all wait a whole prompt step longer for their first token.
// A request alone announces nothing else, so it never waits. The HTTP server also announces each connection it has just
// accepted, until that connection's request arrives (http/generation.ts, announceConnections).

/**
 * Default longest wait for announced requests before a prompt is queued (GANTRY_ARRIVAL_WAIT_MS), and how long a
 * connection just accepted counts as one arriving: a few ms is typical; the bound covers slow bodies.
 */
export const ARRIVAL_WAIT_MS = 50;

export interface Arrival {
  /** The request reached its decode gate, failed, or went away. Idempotent. */
  settle(): void;
}

export class Arrivals {
  /** The longest wait of `quiet` (GANTRY_ARRIVAL_WAIT_MS). */
  readonly waitMs: number;
  private pendingCount = 0;
  private waiters: Array<() => void> = [];

  constructor(waitMs = ARRIVAL_WAIT_MS) {
    this.waitMs = waitMs;
  }

  /** Requests announced and not settled yet. */
  get pending(): number {
    return this.pendingCount;
  }

  announce(): Arrival {
    this.pendingCount++;
    let settled = false;
    return {
      settle: () => {
        if (settled) return;
        settled = true;
        this.pendingCount--;
        if (this.pendingCount === 0) this.wake();
      },
    };
  }

  /**
   * Resolves once no announced request is on its way, or after `maxMs` (default the board's `waitMs`; a request may be
   * slow to arrive: a large body, a model load); undefined (no wait at all) when none is pending or `maxMs` is 0.
   */
  quiet(maxMs = this.waitMs): Promise<void> | undefined {
    if (this.pendingCount === 0 || maxMs <= 0) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      }, maxMs);
      this.waiters.push(done);
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
