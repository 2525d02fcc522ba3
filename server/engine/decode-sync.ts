// Keeps the shared decode batch full: every decode step carries every sequence that has a token ready.
// Each sequence's loop gets its token, does its own work (detokenizing, stop strings) and queues the next one; a step
// dispatched as soon as anything is queued carries only the sequences that were fastest (lock-step drift: 4 streams
// took
// 4/3 decode calls per token with node-llama-cpp's dispatcher). The step batcher (step-batcher.ts) asks this class when
// to dispatch and how to fill a step; the names below ("dispatcher") mean that batcher.
// Two mechanisms, driven by the sequences' own state changes (no polling):
//  1. a step gate: a sequence that got its token (or a new one about to queue its prompt) waits while a decode step is
//     in flight, until every sequence of that step got its token; then all queue together (released on a later
//     macrotask, after node-llama-cpp's dispatcher has looked at its queue: whatever is queued when a step ends is
//     decoded at once, without the sequences still sampling);
//  2. a dispatch schedule: a pending decode is dispatched once every active sequence that is not handing text to its
//     consumer has queued.
// The waits are bounded only as a safety net: between getting a token and queueing the next one a sequence does CPU
// work only (sampling, detokenizing), so a wait for it ends on its own; the bound (a few decode steps) keeps a bug or a
// starved thread from stalling the others, and timeouts are counted.
import type { BatchItem, PrioritizedBatchItem } from "node-llama-cpp";

export interface DecodeSyncOptions {
  /**
   * Upper bound on how long a ready sequence or a pending decode waits for the others. Default: twice the recent
   * decode step time, within 20 ms–1 s (a split batch costs a whole extra decode step, so waiting is nearly always
   * cheaper; the bound is a safety net).
   */
  maxWaitMs?: number;
  /**
   * Disable the gate, the dispatch schedule and the ordering (node-llama-cpp's own "nextCycle" behaviour), for
   * comparisons.
   */
  disabled?: boolean;
}

export interface DecodeStats {
  /** Decode steps: one per token position of the generating streams. */
  decodes: number;
  /** llama_decode calls (a step decoding a burst of prompts larger than the batch makes several). */
  decodeCalls: number;
  /** Times a wait for lagging sequences ran into its bound. */
  gateTimeouts: number;
  dispatchTimeouts: number;
  batchTokens: number;
  /** Sum over decode steps of the sequences each step carried. */
  sequencesInSteps: number;
}

export class DecodeSync {
  private readonly opts: DecodeSyncOptions;
  /** Sequences inside a generation loop. */
  private active = 0;
  /** Sequences that queued a token and wait for its result. */
  private awaiting = 0;
  /**
   * Results of dispatched decode steps not delivered yet (queued sequences whose decode is not dispatched excluded).
   */
  private inFlight = 0;
  /** Sequences handing text to their consumer: a slow client must not hold the others' decode back. */
  private suspended = 0;
  private parked: Array<() => void> = [];
  private parkTimer: NodeJS.Timeout | undefined;
  /** node-llama-cpp's dispatch callback for the pending decode, until every ready sequence has queued. */
  private pendingDispatch: (() => void) | undefined;
  private dispatchTimer: NodeJS.Timeout | undefined;
  private checkScheduled = false;
  readonly stats: DecodeStats = {
    decodes: 0,
    decodeCalls: 0,
    gateTimeouts: 0,
    dispatchTimeouts: 0,
    batchTokens: 0,
    sequencesInSteps: 0,
  };
  /** Moving average of the time from a dispatch to the first token it delivers. */
  private stepMs = 4;
  private dispatchedAt: number | undefined;
  /** Whether the current step's first call carried a generating sequence (single-token item). */
  private stepGenerates = false;
  onDecode: ((batchTokens: number, sequences: number, active: number, continued: boolean) => void) | undefined;

  constructor(opts: DecodeSyncOptions) {
    this.opts = opts;
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

  /** Call right before asking the sequence for its next token. */
  beforeDecode(): void {
    this.awaiting++;
    this.scheduleCheck();
  }

  /** Around handing text to the consumer (a `yield`). */
  suspend(): void {
    this.suspended++;
    this.scheduleCheck();
  }

  resume(): void {
    this.suspended--;
  }

  /** Call when the token (or an error) arrived. */
  afterDecode(): void {
    if (this.dispatchedAt !== undefined) {
      this.stepMs = 0.8 * this.stepMs + 0.2 * (performance.now() - this.dispatchedAt);
      this.dispatchedAt = undefined;
    }
    this.awaiting--;
    if (this.inFlight > 0) this.inFlight--;
    this.maybeRelease();
  }

  /**
   * Call before queueing a decode (the prompt's included). Resolves once no decode step is in flight (or after the wait
   * bound), so the sequences of a step and newcomers queue the next step together. Release happens on a later
   * macrotask, never in the microtasks that deliver the tokens: node-llama-cpp's dispatcher checks its queue right
   * after
   * a decode, and sequences re-queueing within those microtasks would be split between that check and the next one.
   */
  gate(): Promise<void> | undefined {
    // Alone, there is nobody to wait for.
    if (this.opts.disabled || (this.active <= 1 && this.parked.length === 0)) return undefined;
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
   * node-llama-cpp `batching.dispatchSchedule`: called once per pending decode with the function that dispatches it.
   */
  readonly dispatchSchedule = (dispatch: () => void): void => {
    if (this.opts.disabled) {
      setImmediate(dispatch);
      return;
    }
    if (this.active <= 1) {
      dispatch();
      return;
    }
    // A newer pending decode supersedes an older one (node-llama-cpp ignores stale dispatch callbacks anyway).
    if (this.dispatchTimer) clearTimeout(this.dispatchTimer);
    this.pendingDispatch = dispatch;
    this.dispatchTimer = setTimeout(() => {
      this.stats.dispatchTimeouts++;
      this.firePending();
    }, this.waitBound());
    this.scheduleCheck();
  };

  /**
   * Re-checks the pending decode on a later macrotask: a sequence counted in `awaiting` queues its decode in the
   * microtasks that follow beforeDecode(), so the check must come after those.
   */
  private scheduleCheck(): void {
    if (!this.pendingDispatch || this.checkScheduled) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      if (this.awaiting >= this.active - this.suspended) this.firePending();
    });
  }

  private firePending(): void {
    if (this.dispatchTimer) clearTimeout(this.dispatchTimer);
    this.dispatchTimer = undefined;
    const dispatch = this.pendingDispatch;
    this.pendingDispatch = undefined;
    dispatch?.();
  }

  /**
   * The sequence a batch item belongs to, when known. Items are ordered by it: with a KV cache per sequence, llama.cpp
   * splits a batch into one computation per run of consecutive, increasing sequence ids
   * (llama_batch_allocr::split_equal),
   * so 8 single-token items in arrival order could take up to 8 graph computations instead of one.
   */
  sequenceIdOf: ((item: BatchItem) => number | undefined) | undefined;

  /**
   * What a decode step takes of the queued items (`items` in arrival order), counted: whole prompts shortest first
   * (wholePromptsFirst), laid out in sequence id order. Disabled: node-llama-cpp's "maximumParallelism" fair share.
   */
  readonly prioritize = ({ items, size }: { items: readonly BatchItem[]; size: number }): PrioritizedBatchItem[] => {
    const plan = this.opts.disabled ? fairShare(items, size) : this.inSequenceOrder(wholePromptsFirst(items, size));
    // Decided now: once decoded, an item's tokens are what is left of it (none for a generating sequence).
    this.stepGenerates = plan.some((p) => p.item.tokens.length === 1);
    this.record(plan, false);
    return plan;
  };

  /**
   * The next decode call of the current step (the one prioritize planned) when its first call carried no generating
   * sequence, or none: the queued prompts left over in `items` (whole, shortest first), while the step holds fewer than
   * `maxStepTokens`. A burst of prompts larger than the batch is thus decoded in one step, as llama-server decodes it
   * in
   * one call of several 512-token passes, and every stream then generates in lock step; between the calls the finished
   * prompts' first tokens go out. Deferring the rest to the next step instead would add it to the streams' first
   * generation step, and the deferred streams would end one step after the others (measured: 8 × 64 tokens, 0.99 of
   * llama-server).
   * Generating sequences that queue meanwhile wait for the next step (as long as llama-server's callers wait for its
   * call).
   */
  continueStep(
    items: readonly BatchItem[],
    size: number,
    stepTokens: number,
    maxStepTokens: number,
  ): PrioritizedBatchItem[] {
    const left = Math.min(size, maxStepTokens - stepTokens);
    if (this.opts.disabled || left <= 0 || this.stepGenerates) return [];
    const plan = this.inSequenceOrder(
      wholePromptsFirst(
        items.filter((item) => item.tokens.length > 1),
        left,
      ),
    );
    this.record(plan, true);
    return plan;
  }

  private inSequenceOrder(plan: PrioritizedBatchItem[]): PrioritizedBatchItem[] {
    return bySequenceId(plan, (p) => this.sequenceIdOf?.(p.item));
  }

  /** Books a decode call of `plan` (`continued`: a further call of the current step). */
  private record(plan: readonly PrioritizedBatchItem[], continued: boolean): void {
    const batchTokens = plan.reduce((n, p) => n + p.processAmount, 0);
    if (batchTokens === 0) return;
    // Every item is one sequence (one decode queued per sequence at a time), and every planned item takes a token.
    const sequences = plan.length;
    if (!continued) this.stats.decodes++;
    this.stats.decodeCalls++;
    this.dispatchedAt = performance.now();
    this.stats.batchTokens += batchTokens;
    this.stats.sequencesInSteps += sequences;
    // Items decoded to their end deliver a result after this call; a long prompt's first part does not. A further call
    // of a step is not waited for: the sequences done before it queue for the next step meanwhile (it starts after this
    // one), and their text goes out during the call instead of after it.
    if (!continued) this.inFlight += plan.filter((p) => p.processAmount >= p.item.tokens.length).length;
    this.onDecode?.(batchTokens, sequences, this.active, continued);
  }

  private waitBound(): number {
    return this.opts.maxWaitMs ?? Math.min(1000, Math.max(20, 2 * this.stepMs));
  }

  private releaseScheduled = false;

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

/** Items in increasing sequence id order; items of unknown sequence last, in their order. */
export function bySequenceId<T>(items: readonly T[], idOf: (item: T) => number | undefined): T[] {
  const keyed = items.map((item, i) => ({ item, id: idOf(item) ?? Number.MAX_SAFE_INTEGER, i }));
  keyed.sort((a, b) => a.id - b.id || a.i - b.i);
  return keyed.map((k) => k.item);
}

/**
 * A step's share of the batch (`size` tokens) for each queued item: every single-token item (a generating sequence) its
 * token; then whole prompts, shortest first (ties in arrival order), while they fit; only when not even the shortest
 * prompt fits is it cut, to what is left. Items taking nothing wait for a later step and are left out of the plan.
 * A burst of prompts larger than the batch thus gets most of its first tokens after one step instead of all of them
 * after the whole burst (8 × 77 tokens in 512: six prompts finish in the first step), and a short prompt never waits
 * behind a long one. Cutting only when nothing fits whole keeps the step's shape even: llama.cpp computes a batch in
 * one
 * pass per layer of equal per-sequence token counts (split_equal), so a part-prompt beside whole ones costs extra
 * passes.
 * The longest wait is bounded by the sequence count: a prompt deferred now is the shortest once the others are decoded.
 */
export function wholePromptsFirst(items: readonly BatchItem[], size: number): PrioritizedBatchItem[] {
  const amounts = new Map<BatchItem, number>();
  let left = size;
  for (const item of items) {
    if (item.tokens.length === 1 && left > 0) {
      amounts.set(item, 1);
      left--;
    }
  }
  const prompts = items.filter((item) => item.tokens.length > 1).sort((a, b) => a.tokens.length - b.tokens.length);
  let tookPrompt = false;
  for (const item of prompts) {
    if (left <= 0 || (tookPrompt && item.tokens.length > left)) break;
    const amount = Math.min(item.tokens.length, left);
    amounts.set(item, amount);
    left -= amount;
    tookPrompt = true;
  }
  return items.filter((item) => amounts.has(item)).map((item) => ({ item, processAmount: amounts.get(item)! }));
}

/**
 * Every item gets an equal share of the batch; what single-token items leave unused goes to the long (prompt) items in
 * order.
 */
export function fairShare(items: readonly BatchItem[], size: number): PrioritizedBatchItem[] {
  if (items.length === 0) return [];
  const share = Math.max(1, Math.floor(size / items.length));
  let left = size;
  const plan: PrioritizedBatchItem[] = [];
  for (const item of items) {
    if (left <= 0) break;
    const amount = Math.min(item.tokens.length, share, left);
    plan.push({ item, processAmount: amount });
    left -= amount;
  }
  for (const p of plan) {
    if (left <= 0) break;
    const extra = Math.min(p.item.tokens.length - p.processAmount, left);
    p.processAmount += extra;
    left -= extra;
  }
  return plan;
}
