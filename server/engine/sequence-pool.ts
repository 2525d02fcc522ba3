// A loaded model's sequences: handed out one per request, with a bounded FIFO queue of waiters when all are busy.
// Among equally good free sequences the one created first is handed out, so the busy ones stay a compact run of
// sequence ids: llama.cpp decodes a batch in one computation only across consecutive sequence ids (see DecodeSync).
import { AppError } from "../common/errors.ts";

interface Waiter<S> {
  resolve(seq: S): void;
  reject(err: unknown): void;
  prefer: ((seq: S) => number) | undefined;
}

export const serverBusy = (): AppError =>
  new AppError("SERVER_BUSY", "server busy, please try again. maximum pending requests exceeded", { headers: { "Retry-After": "1" } });

export const clientClosed = (): AppError => new AppError("CLIENT_CLOSED", "the client closed the request");

export class SequencePool<S> {
  /** Free sequences in creation order. */
  private readonly free: S[];
  private readonly rank: Map<S, number>;
  private readonly total: number;
  private readonly maxQueue: number;
  private readonly waiters: Waiter<S>[] = [];
  private readonly onChange: () => void;

  constructor(sequences: S[], maxQueue: number, onChange: () => void = () => {}) {
    this.free = [...sequences];
    this.rank = new Map(sequences.map((seq, i) => [seq, i]));
    this.total = sequences.length;
    this.maxQueue = maxQueue;
    this.onChange = onChange;
  }

  get busy(): number {
    return this.total - this.free.length;
  }

  get queued(): number {
    return this.waiters.length;
  }

  /**
   * A free sequence, preferring the highest `prefer` score (e.g. the longest cached prompt prefix); waits in FIFO order
   * when none is free. Throws SERVER_BUSY when the queue is full, CLIENT_CLOSED when `signal` aborts while waiting.
   */
  acquire(signal: AbortSignal | undefined, prefer?: (seq: S) => number): Promise<S> {
    if (signal?.aborted) return Promise.reject(clientClosed());
    if (this.free.length > 0) {
      const seq = this.takeFree(prefer);
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
      const at = this.free.findIndex((f) => this.rank.get(f)! > this.rank.get(seq)!);
      this.free.splice(at < 0 ? this.free.length : at, 0, seq);
    }
    this.onChange();
  }

  /** Fails every waiter (shutdown, unload). */
  rejectWaiters(err: () => unknown): void {
    for (const w of this.waiters.splice(0)) w.reject(err());
    this.onChange();
  }

  /** The best-scored free sequence; the first created among equals. */
  private takeFree(prefer: ((seq: S) => number) | undefined): S {
    let best = 0;
    if (prefer) {
      let bestScore = -1;
      this.free.forEach((s, i) => {
        const score = prefer(s);
        if (score > bestScore) { bestScore = score; best = i; }
      });
    }
    return this.free.splice(best, 1)[0]!;
  }
}
