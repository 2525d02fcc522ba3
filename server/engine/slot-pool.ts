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
  /** Times a later waiter took a freed sequence before this one (release): bounded by the number of sequences. */
  passed: number;
}

/**
 * A compaction move (SlotPool.compact): `busy` takes `free`'s place. `free`'s history is kept: the two trade states
 * (`swap`), or it moves into `spare` (an empty free sequence, which takes `busy`'s old place) first.
 */
export interface SlotMove<S> {
  busy: S;
  free: S;
  spare?: S;
  swap?: boolean;
}

/**
 * How a newly taken sequence may move (acquire): where it adds a run of busy sequences that a free place would not, it
 * takes that place, the history there kept (`canSwap`: the two trade states; else through an empty spare).
 */
export interface Placement<S> {
  canSwap: boolean;
  /** Tokens a sequence holds. */
  held(seq: S): number;
  move(move: SlotMove<S>): void;
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
   * the busy sequences most compact (takeFree's cost); waits in FIFO order when none is free. With `place`, the
   * sequence is chosen by the prompt and the cache alone, then moved next to the busy ones (placeTaken). Throws
   * SERVER_BUSY when the queue is full, CLIENT_CLOSED when `signal` aborts while waiting.
   */
  acquire(
    signal: AbortSignal | undefined,
    prefer?: (seq: S) => number,
    held?: (seq: S) => number,
    restorable = 0,
    place?: Placement<S>,
  ): Promise<S> {
    if (signal?.aborted) return Promise.reject(clientClosed());
    if (this.free.length > 0) {
      const seq = this.takeFree(prefer, held, restorable, place !== undefined);
      if (place) this.placeTaken(seq, place);
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
        passed: 0,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
      this.onChange();
    });
  }

  /**
   * Frees a sequence: to the waiter it holds the longest prefix of, where that beats the first waiter's by more than
   * PREFER_SLACK tokens and no waiter before it has been passed over as many times as there are sequences; else to the
   * first waiter (FIFO); else it is free.
   */
  release(seq: S): void {
    const next = this.waiters.length > 0 ? this.waiters.splice(this.nextWaiter(seq), 1)[0] : undefined;
    if (next) next.resolve(seq);
    else {
      this.free.push(seq);
      this.sortFree();
    }
    this.onChange();
  }

  /** Index of the waiter that takes `seq` (release). */
  private nextWaiter(seq: S): number {
    const scores = this.waiters.map((w) => w.prefer?.(seq) ?? 0);
    let best = 0;
    for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
    const bound = this.all.length;
    if (best === 0 || scores[best]! - scores[0]! <= PREFER_SLACK) return 0;
    if (this.waiters.slice(0, best).some((w) => w.passed >= bound)) return 0;
    for (const w of this.waiters.slice(0, best)) w.passed++;
    return best;
  }

  /** Fails every waiter (shutdown, unload). */
  rejectWaiters(err: () => unknown): void {
    for (const w of this.waiters.splice(0)) w.reject(err());
    this.onChange();
  }

  /**
   * The free sequence that costs least, in tokens: the prompt tokens it lacks against the best cached one (any sequence
   * can have `restorable` tokens of it restored from the RAM prompt cache), the cached tokens it overwrites (another
   * conversation's history, worth keeping for its next turn), and PREFER_SLACK per run of consecutive busy sequences it
   * adds (none where the sequence is placed after: `placed`); ties to the fewest runs, then the best scored, then the
   * first created.
   */
  private takeFree(
    prefer: ((seq: S) => number) | undefined,
    held: ((seq: S) => number) | undefined,
    restorable: number,
    placed = false,
  ): S {
    const own = this.free.map((s) => (prefer ? prefer(s) : 0));
    const scores = own.map((n) => Math.max(n, restorable));
    const runs = this.free.map((s) => this.busyRunsWith(s));
    const bestScore = Math.max(...scores),
      fewestRuns = Math.min(...runs);
    const cost = this.free.map(
      (s, i) =>
        bestScore -
        scores[i]! +
        (held ? Math.max(0, held(s) - own[i]!) : 0) +
        (placed ? 0 : PREFER_SLACK * (runs[i]! - fewestRuns)),
    );
    let best = 0;
    for (let i = 1; i < this.free.length; i++) {
      const d = cost[i]! - cost[best]! || runs[i]! - runs[best]! || scores[best]! - scores[i]!;
      if (d < 0) best = i;
    }
    return this.free.splice(best, 1)[0]!;
  }

  /**
   * Where the busy sequences are not one run of ids: the highest busy sequence moves into the lowest free place above
   * the lowest busy one, and the places here change as the caller moves the states (SlotLoop.relocate). A live history
   * in that place (`held` > 0) is never overwritten: the two trade states (`swap`, when `canSwap`), or it moves into an
   * empty free sequence first (`spare`), or there is no move. Call until it returns undefined: each move lowers the
   * highest busy place.
   */
  compact(held: (seq: S) => number = () => 0, canSwap = false): SlotMove<S> | undefined {
    const busyAt = this.busyFlags();
    const top = busyAt.lastIndexOf(true),
      hole = busyAt.indexOf(false, busyAt.indexOf(true));
    if (top < 0 || hole < 0 || hole > top) return undefined;
    return this.moveInto(top, hole, held, canSwap);
  }

  /**
   * Where the sequence just taken (`seq`, busy) adds a run of busy sequences that a free place would not: it takes the
   * place that leaves the fewest runs (an empty one first, then the one holding least), whose history it keeps (a step
   * spanning a gap costs an extra pass over the weights every token; a move copies two histories once).
   */
  private placeTaken(seq: S, place: Placement<S>): void {
    const at = this.all.indexOf(seq);
    const flags = this.busyFlags();
    const runsNow = runsOf(flags);
    const runsAt = (j: number): number => {
      const moved = [...flags];
      [moved[at], moved[j]] = [false, true];
      return runsOf(moved);
    };
    const places = this.free
      .map((s) => this.all.indexOf(s))
      .map((j) => ({ j, runs: runsAt(j), held: place.held(this.all[j]!) }))
      .filter((p) => p.runs < runsNow)
      .sort((a, b) => a.runs - b.runs || a.held - b.held || a.j - b.j);
    for (const p of places) {
      const move = this.moveInto(at, p.j, place.held, place.canSwap);
      if (move) return place.move(move);
    }
  }

  /**
   * `busy` (at place `top`) takes the free sequence's place `hole`; a live history there is swapped (`canSwap`) or
   * first moved into an empty spare, else there is no move.
   */
  private moveInto(top: number, hole: number, held: (seq: S) => number, canSwap: boolean): SlotMove<S> | undefined {
    const busy = this.all[top]!,
      free = this.all[hole]!;
    const live = held(free) > 0;
    const spare = live && !canSwap ? this.free.find((s) => s !== free && held(s) === 0) : undefined;
    if (live && !spare && !canSwap) return undefined;
    this.all[hole] = busy;
    if (spare) {
      const at = this.all.indexOf(spare);
      this.all[at] = free;
      this.all[top] = spare;
    } else this.all[top] = free;
    this.sortFree();
    return spare ? { busy, free, spare } : live ? { busy, free, swap: true } : { busy, free };
  }

  /** Busy or not, for each sequence of `all`; `alsoBusy` counted busy. */
  private busyFlags(alsoBusy?: S): boolean[] {
    return this.all.map((s) => s === alsoBusy || !this.free.includes(s));
  }

  /** Runs of consecutive busy sequences if `seq` were busy too. */
  private busyRunsWith(seq: S): number {
    return runsOf(this.busyFlags(seq));
  }

  private sortFree(): void {
    this.free.sort((a, b) => this.all.indexOf(a) - this.all.indexOf(b));
  }
}

/** Runs of consecutive busy places. */
const runsOf = (busy: boolean[]): number => busy.filter((b, i) => b && !busy[i - 1]).length;
