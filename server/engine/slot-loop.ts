// The slot loop: the scheduler of one loaded model's context, as llama-server's slot loop is of its context. Slots are
// the context's sequences (one KV stream each), handed out one per request (slot-pool.ts). Each decode step carries
// every generating slot and whole prompts shortest first, laid out in slot id order, and each finished item's next
// token is sampled right after the decode (step-runner.ts runs the steps, step-call.ts each decode call). When a step
// starts and what it carries is step-fill.ts's rule, so every step is full. Between steps the loop edits the KV cache
// (slot-states.ts): prefix truncation for a new prompt, and compaction (a slot leaving a gap among the busy slot ids
// has the highest busy slot move into it). Small steps (generation) decode on the JS thread when the runtime allows
// it (inline decode), or, on a GPU, the steps are pipelined (step-pipeline.ts): a step's continuing slots decode their
// next token before their generation loops have it. All native calls go through the port (native/port.ts).
import type { Token } from "node-llama-cpp";
import { DecodeTurns } from "./decode-turns.ts";
import type { NativeContext, NativeSampler, RowLogits } from "./native/port.ts";
import type { ModelPromptCache } from "./prompt-cache.ts";
import { SampleBatch } from "./sample-batch.ts";
import { SlotPool, type SlotMove } from "./slot-pool.ts";
import { movesStates, Slot, SlotStates, type Reuse } from "./slot-states.ts";
import type { InlineDecodePolicy, Queued, SampleFn, StepCounts, VerifyFn } from "./step-call.ts";
import { StepFill, type DecodeStats, type StepFillOptions } from "./step-fill.ts";
import type { ContinueFn } from "./step-pipeline.ts";
import { StepRunner } from "./step-runner.ts";

export { Slot };
export { INLINE_DECODE, type InlineDecodePolicy, type SampleFn, type VerifyFn } from "./step-call.ts";

export interface SlotLoopOptions {
  /** Slots (sequences of the context). */
  parallel: number;
  /** Requests that may wait for a free slot before SERVER_BUSY. */
  maxQueue: number;
  /** Shared with the other contexts of the runtime. */
  turns?: DecodeTurns;
  /** Decode small steps on the JS thread (ignored where the native context cannot, and with `pipeline`). */
  inline?: InlineDecodePolicy | undefined;
  /** Pipeline the steps (step-pipeline.ts; every step decodes on a worker then): for a runtime computing on a GPU. */
  pipeline?: boolean;
  /** A step started with continuations, or a continuation dropped (its stream ended without it). */
  onPipeline?: (event: "step" | "dropped") => void;
  fill?: StepFillOptions;
  /** Move busy slots into gaps among the busy ids (release). */
  moveSlots?: boolean;
  /** The pool's busy or queued counts changed. */
  onPoolChange?: (busy: number, queued: number) => void;
  /** A compaction move finished (ok) or failed. */
  onMove?: (ok: boolean) => void;
  /** The RAM prompt cache: a history about to be overwritten is saved there, and a prompt restored from it (reuse). */
  promptCache?: ModelPromptCache | undefined;
}

const heldTokens = (s: Slot): number => s.tokens.length;

export class SlotLoop {
  readonly native: NativeContext;
  private readonly pool: SlotPool<Slot>;
  private readonly fill: StepFill;
  private readonly turns: DecodeTurns;
  private readonly onMove: ((ok: boolean) => void) | undefined;
  /** The slots' KV-state edits (cut, save, restore, move). */
  private readonly states: SlotStates;
  /** A step's sampling calls, made as one. */
  private readonly sampling: SampleBatch;
  /** Busy slots move down into gaps (release): unless switched off, until a move fails. */
  private moveSlots: boolean;
  /** The decode steps and the KV-cache edits between them. */
  private readonly runner: StepRunner;

  constructor(native: NativeContext, o: SlotLoopOptions) {
    this.native = native;
    this.turns = o.turns ?? new DecodeTurns();
    this.fill = new StepFill(o.fill);
    this.moveSlots = o.moveSlots ?? true;
    this.onMove = o.onMove;
    this.states = new SlotStates(native, o.promptCache);
    this.sampling = new SampleBatch(native);
    this.runner = new StepRunner(native, {
      fill: this.fill,
      turns: this.turns,
      sampling: this.sampling,
      inline: !o.pipeline && o.inline && typeof native.decodeBatchInline === "function" ? o.inline : undefined,
      pipeline: o.pipeline ?? false,
      onPipeline: o.onPipeline,
    });
    const slots = Array.from({ length: o.parallel }, (_, id) => new Slot(id));
    this.pool = new SlotPool(slots, o.maxQueue, () => o.onPoolChange?.(this.pool.busy, this.pool.queued));
  }

  /** Whether small steps decode on the JS thread. */
  get inlineDecode(): boolean {
    return this.runner.inlineDecode;
  }

  /** Whether the steps are pipelined (step-pipeline.ts). */
  get pipelined(): boolean {
    return this.runner.pipelined;
  }

  /** Decode steps run inline and on a worker, so far; `pipelined`: those started with continuations. */
  get steps(): Readonly<StepCounts> {
    return this.runner.counts;
  }

  get busy(): number {
    return this.pool.busy;
  }

  get queued(): number {
    return this.pool.queued;
  }

  get stats(): Readonly<DecodeStats> {
    return this.fill.stats;
  }

  /** Hears of each decode call (metrics). */
  set onDecode(fn: (batchTokens: number, sequences: number, active: number, continued: boolean) => void) {
    this.fill.onDecode = fn;
  }

  // ---- slots ----

  /**
   * A free slot for a request, the one whose cache holds most of the prompt (`prefer`) and loses least (`held`); waits
   * in FIFO order when none is free (SlotPool.acquire). Where it adds a gap among the busy slot ids, it moves next to
   * them (the history in that place kept), as release's compaction does: `onMoveFailed` hears of a failed move.
   */
  acquire(
    signal: AbortSignal | undefined,
    prefer?: (slot: Slot) => number,
    held?: (slot: Slot) => number,
    restorable = 0,
    onMoveFailed: (err: unknown) => void = () => {},
  ): Promise<Slot> {
    const place = this.moveSlots
      ? { canSwap: movesStates(this.native), held: heldTokens, move: (m: SlotMove<Slot>) => this.move(m, onMoveFailed) }
      : undefined;
    return this.pool.acquire(signal, prefer, held, restorable, place);
  }

  /** Tokens of `prompt` the RAM prompt cache could restore into any slot (0 without a cache). */
  restorable(prompt: readonly Token[]): number {
    return this.states.restorable(prompt);
  }

  /**
   * Returns a request's slot. Where that leaves a gap among the busy slot ids (busy 0, 2, 3), the highest busy slot
   * moves down into it (3 → 1): llama.cpp decodes a step in one pass only across consecutive sequence ids, and requests
   * of different lengths leave such gaps all the time. `onMoveFailed` hears of a failed move (gaps stay then).
   */
  release(slot: Slot, onMoveFailed: (err: unknown) => void): void {
    this.pool.release(slot);
    // Idle: the threadpool's threads would poll for a next decode on a core (NativeContext.pauseThreadpool).
    if (this.pool.busy === 0 && this.native.pauseThreadpool) this.pauseThreadpool();
    if (!this.moveSlots) return;
    const canSwap = movesStates(this.native);
    for (let move = this.pool.compact(heldTokens, canSwap); move; move = this.pool.compact(heldTokens, canSwap))
      this.move(move, onMoveFailed);
  }

  /** A move between steps; the first failure stops moves for good (what the sequences hold is unknown then). */
  private move(move: SlotMove<Slot>, onMoveFailed: (err: unknown) => void): void {
    this.relocate(move).then(
      () => this.onMove?.(true),
      (err: unknown) => {
        this.onMove?.(false);
        if (this.moveSlots) onMoveFailed(err);
        this.moveSlots = false;
      },
    );
  }

  /** Fails every request waiting for a slot (shutdown, unload). */
  rejectWaiters(err: () => unknown): void {
    this.pool.rejectWaiters(err);
  }

  // ---- a request's generation loop (generation.ts) ----

  /** A request's generation loop starts: steps wait for its tokens from now on. */
  enter(): void {
    this.fill.enter();
  }

  /**
   * A request's generation loop ends: a continuation of its slot it did not take is dropped (its token stays in the
   * slot's KV cache if it was decoded, never sampled after; one still queued goes unqueued).
   */
  leave(slot?: Slot): void {
    if (slot) this.runner.drop(slot);
    this.fill.leave();
  }

  /**
   * A request's generation loop knows it ends (a stop string, its last token): a continuation of its slot is dropped
   * now, as leave does, so no step waits for the loop while its client takes the last text.
   */
  drop(slot: Slot): void {
    this.runner.drop(slot);
  }

  /**
   * Await before queueing work (StepFill.gate): the slots of a step and newcomers queue the next step together. Not
   * for `slot`'s continuation (its token is queued or decoding already), nor while a pipelined step is in flight: the
   * next step starts from what is queued when its rows are sampled.
   */
  gate(slot?: Slot): Promise<void> | undefined {
    return this.runner.gate(slot);
  }

  /** Around handing text to the client: steps do not wait for this slot meanwhile. */
  suspend(): void {
    this.fill.suspend();
  }

  resume(): void {
    this.fill.resume();
  }

  /**
   * Queues `tokens` after what the slot holds; resolves with the token sampled after the last of them. With the
   * pipeline, `continues` says whether that token may be decoded before the caller has it; evaluating a token so
   * continued takes its continuation (already queued or decoding) instead of queueing it again.
   */
  evaluate(slot: Slot, tokens: Token[], sample: SampleFn, continues?: ContinueFn): Promise<Token> {
    if (tokens.length === 0) return Promise.reject(new Error("nothing to evaluate"));
    return (
      this.runner.take(slot, tokens, sample, continues) ??
      this.queueWork<Token>((resolve, reject) => ({ slot, tokens: [...tokens], sample, resolve, reject, continues }))
    );
  }

  /**
   * Queues a token and the tokens drafted after it (speculative decoding), decoded together in one call; `verify` reads
   * the logit rows of all of them and resolves with the tokens sampled. The drafted tokens it did not accept are
   * dropped from the slot's KV cache before the next call: the slot then holds the token and the accepted ones.
   */
  evaluateDraft(slot: Slot, token: Token, draft: readonly Token[], verify: VerifyFn): Promise<Token[]> {
    return this.queueWork<Token[]>((resolve, reject) => ({
      slot,
      tokens: [token, ...draft],
      whole: true,
      sample: () => Promise.reject(new Error("a draft is verified, not sampled")),
      resolve: () => undefined,
      reject,
      verify: { rows: draft.length + 1, fn: verify, resolve },
    }));
  }

  /** Queues the work `make` builds for the next step; resolves with its result, counted for the step fill. */
  private queueWork<T>(make: (resolve: (result: T) => void, reject: (err: unknown) => void) => Queued): Promise<T> {
    this.fill.beforeDecode();
    const result = new Promise<T>((resolve, reject) => this.runner.queueWork(make(resolve, reject)));
    const arrived = () => this.fill.afterDecode();
    result.then(arrived, arrived);
    return result;
  }

  /**
   * The native sampling call, for the slots' samplers (inside their SampleFn, after a step's decode): the calls the
   * step's rows make as it hands them over are made as one (SampleBatch).
   */
  readonly sampleToken = (batchLogitIndex: number, sampler: NativeSampler): Promise<number> =>
    this.sampling.sampleToken(batchLogitIndex, sampler);

  /** NativeContext.tokenLogits, like sampleToken only inside a SampleFn. */
  readonly tokenLogits = (
    batchLogitIndex: number,
    sampler: NativeSampler,
    tokens: number[],
    top: number,
  ): Promise<RowLogits> => this.native.tokenLogits(batchLogitIndex, sampler, tokens, top);

  // ---- KV-cache edits, between steps ----

  /**
   * Drops what the slot holds from `keepOf(tokens it holds)` on (all of it when the model's memory cannot drop a part).
   * Runs when no step is in flight (at once, or right after the step in flight), before the next step, after the edits
   * queued before it: `keepOf` sees what the slot holds then.
   */
  truncate(slot: Slot, keepOf: (held: readonly Token[]) => number): Promise<void> {
    return this.runner.betweenSteps(() => this.states.cut(slot, keepOf(slot.tokens)));
  }

  /**
   * A context shift, between steps: drops `discard` tokens after the first `keep` the slot holds and moves the rest
   * down (llama-server's, when generation reaches the context's end). False when the model's memory cannot.
   */
  async shift(slot: Slot, keep: number, discard: number): Promise<boolean> {
    let shifted = false;
    await this.runner.betweenSteps(() => {
      const end = keep + discard;
      if (discard <= 0 || end > slot.tokens.length || !this.native.removeTokens(slot.id, keep, end)) return;
      this.native.shiftTokens(slot.id, end, slot.tokens.length, -discard);
      slot.tokens.splice(keep, discard);
      shifted = true;
    });
    return shifted;
  }

  /**
   * Readies a slot for `prompt`, between steps: where the RAM prompt cache holds more of the prompt than the slot (by
   * more than MIN_CACHED_TOKENS), its saved state replaces what the slot holds (which goes to the cache first);
   * then what the slot holds beyond `keepOf` goes, as truncate. A state the runtime refuses leaves the slot empty
   * (the prompt is then evaluated whole) and leaves the cache.
   */
  reuse(slot: Slot, prompt: readonly Token[], keepOf: (held: readonly Token[]) => number): Promise<Reuse> {
    return this.runner.betweenSteps(() => this.states.reuse(slot, prompt, keepOf));
  }

  /**
   * Moves what the busy slot holds into the free slot's sequence, between steps (a step spanning a gap in the busy
   * ids costs an extra pass over the weights every token), and the slots trade sequence ids: `busy` goes on generating
   * under `free`'s old id. What `free` held is never lost: with `swap` the two trade states (through host memory: only
   * the cells in use are copied), with `spare` it is first copied into that empty slot's sequence (the spare then takes
   * `busy`'s old id); a plain move (`free` held nothing) leaves `free` with a copy of `busy`'s state, a valid cache.
   * A copy within the runtime (copySequence) happens at the next decode, and copies the whole KV stream (16–23 MB for
   * the bench models).
   */
  relocate(move: SlotMove<Slot>): Promise<void> {
    return this.runner.betweenSteps(() => this.states.move(move));
  }

  /** Resolves when no edit and no step is running. The context waits before it is freed. */
  drained(): Promise<void> {
    return this.runner.drained();
  }

  /**
   * Decodes what is not a token run into the slot's sequence after what it holds (an image: `decode` gets the sequence
   * id and the position to start at, and encodes and decodes its embeddings), between steps and holding the runtime's
   * decode turn (an encode computes on every core too); the slot then holds `cells` for it. A failed decode leaves
   * the slot empty (what the sequence holds is unknown then).
   */
  decodeOther(slot: Slot, cells: readonly Token[], decode: (sequenceId: number, position: number) => Promise<void>) {
    return this.runner.betweenSteps(async () => {
      const turn = this.turns.take();
      if (turn) await turn;
      try {
        // The callback computes with threads of its own first (an image encode): the threadpool's threads would poll
        // on a core meanwhile. Its decode wakes them.
        this.native.pauseThreadpool?.();
        await decode(slot.id, slot.tokens.length);
        slot.tokens.push(...cells);
      } catch (err) {
        this.native.disposeSequence(slot.id);
        slot.tokens.length = 0;
        throw err;
      } finally {
        this.turns.give();
      }
    });
  }

  /**
   * Pauses the threadpool when no decode is in flight (between steps, after the edits queued before): its threads
   * would poll on the cores another context (a draft model) computes on. The next decode wakes them.
   */
  pauseThreadpool(): void {
    void this.runner.betweenSteps(() => {
      this.native.pauseThreadpool?.();
    });
  }
}
