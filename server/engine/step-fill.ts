// The slot loop's rule for when a decode step starts and what it carries, so that every step is full: it carries every
// generating sequence that has a token ready (llama-server's slot loop gets this for free, its slots being plain data
// inside one loop; here each sequence is its own async loop that detokenizes, checks stops and hands text to its
// client between two tokens). A step started as soon as anything is queued would carry only the fastest sequences
// (lock-step drift: 4 streams took 4/3 decode calls per token that way).
// Two mechanisms, driven by the sequences' own state changes (no polling):
//  1. a gate: a sequence that got its token (or a new one about to queue its prompt) waits while a decode step is in
//     flight, until every sequence of that step got its token; then all queue together (released on a later
//     macrotask: whatever is queued when a step ends is decoded at once, without the sequences still sampling);
//  2. a start rule (whenFull): a queued step starts once every active sequence that is not handing text to its client
//     has queued.
// The waits are bounded only as a safety net: between getting a token and queueing the next one a sequence does CPU
// work only (sampling, detokenizing), so a wait for it ends on its own; the bound (a few decode steps) keeps a bug or a
// starved thread from stalling the others, and timeouts are counted.
import { bySequenceId, generates, wholePromptsFirst, type Planned, type StepItem } from "./step-plan.ts";

export interface StepFillOptions {
  /**
   * Upper bound on how long a ready sequence or a queued step waits for the others. Default: twice the recent decode
   * step time, within 20 ms–1 s (a split batch costs a whole extra decode step, so waiting is nearly always cheaper;
   * the bound is a safety net).
   */
  maxWaitMs?: number;
}

export interface DecodeStats {
  /** Decode steps: one per token position of the generating streams. */
  decodes: number;
  /** llama_decode calls (a step decoding a burst of prompts larger than the batch makes several). */
  decodeCalls: number;
  /** Times a wait for lagging sequences ran into its bound. */
  gateTimeouts: number;
  startTimeouts: number;
  batchTokens: number;
  /** Sum over decode steps of the sequences each step carried. */
  sequencesInSteps: number;
}

export class StepFill {
  private readonly maxWaitMs: number | undefined;
  /** Sequences inside a generation loop. */
  private active = 0;
  /** Sequences that queued a token and wait for its result. */
  private awaiting = 0;
  /** Results of started decode steps not delivered yet (queued sequences whose step has not started excluded). */
  private inFlight = 0;
  /** Sequences handing text to their client: a slow client must not hold the others' decode back. */
  private suspended = 0;
  private parked: Array<() => void> = [];
  private parkTimer: NodeJS.Timeout | undefined;
  /** Starts the queued step, until every ready sequence has queued. */
  private pendingStart: (() => void) | undefined;
  private startTimer: NodeJS.Timeout | undefined;
  private checkScheduled = false;
  private releaseScheduled = false;
  readonly stats: DecodeStats = {
    decodes: 0,
    decodeCalls: 0,
    gateTimeouts: 0,
    startTimeouts: 0,
    batchTokens: 0,
    sequencesInSteps: 0,
  };
  /** Moving average of the time from a step's start to the first token it delivers. */
  private stepMs = 4;
  private startedAt: number | undefined;
  /** Whether the current step's first call carried a generating sequence (single-token item). */
  private stepGenerates = false;
  onDecode: ((batchTokens: number, sequences: number, active: number, continued: boolean) => void) | undefined;

  constructor(opts: StepFillOptions = {}) {
    this.maxWaitMs = opts.maxWaitMs;
  }

  get activeSequences(): number {
    return this.active;
  }

  enter(): void {
    this.active++;
  }

  leave(): void {
    this.active--;
    this.maybeRelease();
    this.scheduleCheck();
  }

  /** Call right before a sequence queues work for a decode. */
  beforeDecode(): void {
    this.awaiting++;
    this.scheduleCheck();
  }

  /** Around handing text to the client (a `yield`). */
  suspend(): void {
    this.suspended++;
    this.scheduleCheck();
  }

  resume(): void {
    this.suspended--;
  }

  /** Call when the token (or an error) arrived. */
  afterDecode(): void {
    if (this.startedAt !== undefined) {
      this.stepMs = 0.8 * this.stepMs + 0.2 * (performance.now() - this.startedAt);
      this.startedAt = undefined;
    }
    this.awaiting--;
    if (this.inFlight > 0) this.inFlight--;
    this.maybeRelease();
  }

  /**
   * Call before queueing a decode (the prompt's included). Resolves once no decode step is in flight (or after the wait
   * bound), so the sequences of a step and newcomers queue the next step together. Release happens on a later
   * macrotask, never in the microtasks that deliver the tokens: sequences re-queueing within those microtasks would be
   * split between the step that starts right after them and the next one.
   */
  gate(): Promise<void> | undefined {
    // Alone, there is nobody to wait for.
    if (this.active <= 1 && this.parked.length === 0) return undefined;
    const parked = new Promise<void>((resolve) => this.parked.push(resolve));
    if (this.inFlight === 0) this.scheduleRelease();
    else
      this.parkTimer ??= setTimeout(() => {
        this.stats.gateTimeouts++;
        this.releaseAll();
      }, this.waitBound());
    return parked;
  }

  /**
   * Whether a step started now is full (every active sequence not handing text to its client has queued), once the
   * results of `settling` queued sequences are handed over (the step pipeline decides before it hands them over).
   */
  full(settling: number): boolean {
    return this.awaiting - settling >= this.active - this.suspended;
  }

  /** Calls `start` (once) when the queued step is full: every ready sequence has queued, or the wait bound passed. */
  whenFull(start: () => void): void {
    if (this.active <= 1) {
      start();
      return;
    }
    // A newer request to start supersedes an older one.
    if (this.startTimer) clearTimeout(this.startTimer);
    this.pendingStart = start;
    this.startTimer = setTimeout(() => {
      this.stats.startTimeouts++;
      this.firePending();
    }, this.waitBound());
    this.scheduleCheck();
  }

  /**
   * Re-checks the queued step on a later macrotask: a sequence counted in `awaiting` queues its work in the microtasks
   * that follow beforeDecode(), so the check must come after those.
   */
  private scheduleCheck(): void {
    if (!this.pendingStart || this.checkScheduled) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      if (this.awaiting >= this.active - this.suspended) this.firePending();
    });
  }

  private firePending(): void {
    if (this.startTimer) clearTimeout(this.startTimer);
    this.startTimer = undefined;
    const start = this.pendingStart;
    this.pendingStart = undefined;
    start?.();
  }

  /**
   * The first decode call of a step over the queued `items` (in arrival order): whole prompts shortest first
   * (wholePromptsFirst), laid out in sequence id order (`idOf`).
   */
  planStep<T extends StepItem>(items: readonly T[], size: number, idOf: (item: T) => number | undefined): Planned<T>[] {
    const plan = bySequenceId(wholePromptsFirst(items, size), (p) => idOf(p.item));
    // Decided now: once decoded, an item's tokens are what is left of it (none for a generating sequence).
    this.stepGenerates = plan.some((p) => generates(p.item));
    this.record(plan, false);
    return plan;
  }

  /**
   * The next decode call of the current step when its first call carried no generating sequence, or none: the queued
   * prompts left over in `items` (whole, shortest first), while the step holds fewer than `maxStepTokens`. A burst of
   * prompts larger than the batch is thus decoded in one step, as llama-server decodes it in one call of several
   * 512-token passes, and every stream then generates in lock step; between the calls the finished prompts' first
   * tokens go out. Deferring the rest to the next step instead would add it to the streams' first generation step, and
   * the deferred streams would end one step after the others (measured: 8 × 64 tokens, 0.99 of llama-server).
   * Generating sequences that queue meanwhile wait for the next step (as long as llama-server's callers wait for its
   * call).
   */
  planContinuation<T extends StepItem>(
    items: readonly T[],
    size: number,
    stepTokens: number,
    maxStepTokens: number,
    idOf: (item: T) => number | undefined,
  ): Planned<T>[] {
    const left = Math.min(size, maxStepTokens - stepTokens);
    if (left <= 0 || this.stepGenerates) return [];
    const plan = bySequenceId(
      wholePromptsFirst(
        items.filter((item) => !generates(item)),
        left,
      ),
      (p) => idOf(p.item),
    );
    this.record(plan, true);
    return plan;
  }

  /** Books a decode call of `plan` (`continued`: a further call of the current step). */
  private record(plan: readonly Planned<StepItem>[], continued: boolean): void {
    const batchTokens = plan.reduce((n, p) => n + p.processAmount, 0);
    if (batchTokens === 0) return;
    // Every item is one sequence (one decode queued per sequence at a time), and every planned item takes a token.
    const sequences = plan.length;
    if (!continued) this.stats.decodes++;
    this.stats.decodeCalls++;
    this.startedAt = performance.now();
    this.stats.batchTokens += batchTokens;
    this.stats.sequencesInSteps += sequences;
    // Items decoded to their end deliver a result after this call; a long prompt's first part does not. A further call
    // of a step is not waited for: the sequences done before it queue for the next step meanwhile (it starts after this
    // one), and their text goes out during the call instead of after it.
    if (!continued) this.inFlight += plan.filter((p) => p.processAmount >= p.item.tokens.length).length;
    this.onDecode?.(batchTokens, sequences, this.active, continued);
  }

  private waitBound(): number {
    return this.maxWaitMs ?? Math.min(1000, Math.max(20, 2 * this.stepMs));
  }

  private maybeRelease(): void {
    if (this.inFlight === 0 && this.parked.length > 0) this.scheduleRelease();
  }

  private scheduleRelease(): void {
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    setImmediate(() => {
      this.releaseScheduled = false;
      this.releaseAll();
    });
  }

  private releaseAll(): void {
    if (this.parkTimer) clearTimeout(this.parkTimer);
    this.parkTimer = undefined;
    const parked = this.parked;
    this.parked = [];
    for (const resolve of parked) resolve();
  }
}
