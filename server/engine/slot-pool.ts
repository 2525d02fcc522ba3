// The slot loop's slots (a loaded model's sequences): handed out one per request, with a bounded FIFO queue of waiters
// when all are busy. The busy sequences are kept a compact run of sequence ids where a cached prompt prefix does not
// say otherwise: llama.cpp (one KV stream per sequence) decodes a step in one computation only across consecutive
// sequence ids, so busy sequences 0, 1, 3 cost two passes over the weights per token (measurements: docs/engine.md).
// Prefilling a few dozen tokens again costs less than that.
import { AppError } from "../common/errors.ts";

interface Waiter<S> {
  resolve(seq: S): void;
  reject(err: unknown): void;
  prefer: ((seq: S) => number) | undefined;
}

export const serverBusy = (): AppError =>
  new AppError("SERVER_BUSY", "server busy, please try again. maximum pending requests exceeded", {
    headers: { "Retry-After": "1" },
  });

export const clientClosed = (): AppError => new AppError("CLIENT_CLOSED", "the client closed the request");

/** A cached prefix this much longer than another sequence's (tokens) outweighs keeping the busy sequences compact. */
export const PREFER_SLACK = 32;

export class SlotPool<S> {
  /** Every sequence in sequence id order: creation order, as compact() rearranges it. */
  private readonly all: S[];
  /** Free sequences, in the order of `all`. */
  private readonly free: S[];
  private readonly maxQueue: number;
  private readonly waiters: Waiter<S>[] = [];
  private readonly onChange: () => void;

  constructor(sequences: S[], maxQueue: number, onChange: () => void = () => {}) {
    this.all = [...sequences];
    this.free = [...sequences];
    this.maxQueue = maxQueue;
    this.onChange = onChange;
  }

  get busy(): number {
    return this.all.length - this.free.length;
  }

  get queued(): number {
    return this.waiters.length;
  }

  /**
   * A free sequence: the one with the most of the prompt cached (`prefer`'s score), where it beats the others by more
   * than PREFER_SLACK or by more than the cache it overwrites (`held`: the tokens it holds), else the one that keeps
   * the busy sequences most compact (takeFree's cost); waits in FIFO order when none is free. Throws SERVER_BUSY when
   * the queue is full, CLIENT_CLOSED when `signal` aborts while waiting.
   */
  acquire(signal: AbortSignal | undefined, prefer?: (seq: S) => number, held?: (seq: S) => number): Promise<S> {
    if (signal?.aborted) return Promise.reject(clientClosed());
    if (this.free.length > 0) {
      const seq = this.takeFree(prefer, held);
      this.onChange();
      return Promise.resolve(seq);
    }
    if (this.waiters.length >= this.maxQueue) return Promise.reject(serverBusy());
    return new Promise<S>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        this.onChange();
        reject(clientClosed());
      };
      const waiter: Waiter<S> = {
        resolve: (seq) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(seq);
        },
        reject: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
        prefer,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
      this.onChange();
    });
  }

  release(seq: S): void {
    const next = this.waiters.shift();
    if (next) next.resolve(seq);
    else {
      this.free.push(seq);
      this.sortFree();
    }
    this.onChange();
  }

  /** Fails every waiter (shutdown, unload). */
  rejectWaiters(err: () => unknown): void {
    for (const w of this.waiters.splice(0)) w.reject(err());
    this.onChange();
  }

  /**
   * The free sequence that costs least, in tokens: the prompt tokens it lacks against the best cached one, the cached
   * tokens it overwrites (another conversation's history, worth keeping for its next turn), and PREFER_SLACK per run of
   * consecutive busy sequences it adds; ties to the fewest runs, then the best scored, then the first created.
   */
  private takeFree(prefer: ((seq: S) => number) | undefined, held: ((seq: S) => number) | undefined): S {
    const scores = this.free.map((s) => (prefer ? prefer(s) : 0));
    const runs = this.free.map((s) => this.busyRunsWith(s));
    const bestScore = Math.max(...scores),
      fewestRuns = Math.min(...runs);
    const cost = this.free.map(
      (s, i) =>
        bestScore -
        scores[i]! +
        (held ? Math.max(0, held(s) - scores[i]!) : 0) +
        PREFER_SLACK * (runs[i]! - fewestRuns),
    );
    let best = 0;
    for (let i = 1; i < this.free.length; i++) {
      const d = cost[i]! - cost[best]! || runs[i]! - runs[best]! || scores[best]! - scores[i]!;
      if (d < 0) best = i;
    }
    return this.free.splice(best, 1)[0]!;
  }

  /**
   * Where the busy sequences are not one run of ids: the highest busy sequence and the lowest free one above the lowest
   * busy one, which trade places in the order here; the caller moves the busy one's state into the free one's (see
   * SlotLoop.relocate). Call until it returns undefined: each move lowers the highest busy place.
   */
  compact(): { busy: S; free: S } | undefined {
    const busyAt = this.busyFlags();
    const top = busyAt.lastIndexOf(true),
      hole = busyAt.indexOf(false, busyAt.indexOf(true));
    if (top < 0 || hole < 0 || hole > top) return undefined;
    const busy = this.all[top]!,
      free = this.all[hole]!;
    this.all[top] = free;
    this.all[hole] = busy;
    this.sortFree();
    return { busy, free };
  }

  /** Busy or not, for each sequence of `all`; `alsoBusy` counted busy. */
  private busyFlags(alsoBusy?: S): boolean[] {
    return this.all.map((s) => s === alsoBusy || !this.free.includes(s));
  }

  /** Runs of consecutive busy sequences if `seq` were busy too. */
  private busyRunsWith(seq: S): number {
    return this.busyFlags(seq).filter((busy, i, flags) => busy && !flags[i - 1]).length;
  }

  private sortFree(): void {
    this.free.sort((a, b) => this.all.indexOf(a) - this.all.indexOf(b));
  }
}
