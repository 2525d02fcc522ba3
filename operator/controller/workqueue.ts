// A de-duplicating work queue of keys (client-go's workqueue): a key is queued at most once, is never processed by two
// workers at once (added while processing, it is processed again afterwards), and failing keys come back after an
// exponential per-key backoff. Level-triggered: a key means "look at this app again", never "this happened". Two lanes:
// urgent keys (an app whose spec the operator has not acted on) go before the rest (status refreshes).

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class WorkQueue {
  /** Keys waiting for a worker, by lane. A key handed out or moved ahead leaves its entry behind, skipped by next(). */
  private readonly lanes = { urgent: [] as string[], normal: [] as string[] };
  /** Waiting keys, and whether each is urgent. */
  private readonly waiting = new Map<string, boolean>();
  private readonly processing = new Set<string>();
  /** Keys added while processed (and whether urgent): queued again by done(). */
  private readonly again = new Map<string, boolean>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 300_000;
  }

  /** Keys waiting to be processed. */
  get length(): number {
    return this.waiting.size;
  }

  /**
   * Queues the key once. `urgent`: handed out before every key that is not (a spec the operator has not acted on, ahead
   * of status refreshes after pod events, as controller-runtime's priority queue puts new events before its resyncs);
   * a waiting key added again as urgent moves ahead.
   */
  add(key: string, urgent = false): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.again.set(key, urgent || (this.again.get(key) ?? false)); // done() queues it again
      return;
    }
    const waits = this.waiting.get(key);
    if (waits !== undefined) {
      if (urgent && !waits) {
        this.waiting.set(key, true);
        this.lanes.urgent.push(key);
      }
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.waiting.set(key, urgent);
    this.lanes[urgent ? "urgent" : "normal"].push(key);
  }

  /** Adds the key after a delay (one pending timer per key: the earliest deadline wins). */
  addAfter(key: string, delayMs: number, urgent = false): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key, urgent);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key, urgent);
    }, delayMs);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Adds the key after its backoff, which doubles with each consecutive failure. */
  addRateLimited(key: string, urgent = false): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
    this.addAfter(key, delay, urgent);
    return delay;
  }

  /** Clears a key's failure count (after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next waiting key (urgent first), now in process; undefined when none waits. */
  private next(): string | undefined {
    for (const lane of ["urgent", "normal"] as const) {
      for (let key = this.lanes[lane].shift(); key !== undefined; key = this.lanes[lane].shift()) {
        if (this.waiting.get(key) !== (lane === "urgent")) continue; // handed out already, or moved ahead
        this.waiting.delete(key);
        this.processing.add(key);
        return key;
      }
    }
    return undefined;
  }

  /** The next key to process, waiting for one; undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.next();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key processed; if it was added meanwhile, it is queued again (urgent if any of those adds was). */
  done(key: string): void {
    this.processing.delete(key);
    const urgent = this.again.get(key);
    if (urgent !== undefined) {
      this.again.delete(key);
      this.add(key, urgent);
    }
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
