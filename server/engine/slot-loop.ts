// The slot loop: the scheduler of one loaded model's context, as llama-server's slot loop is of its context. Slots are
// the context's sequences (one KV stream each), handed out one per request (slot-pool.ts). Each decode step carries
// every generating slot and whole prompts shortest first, laid out in slot id order, and each finished item's next
// token is sampled right after the decode; a step of prompts alone goes on with further calls for the prompts left,
// so a burst larger than the batch is one step. When a step starts and what it carries is step-fill.ts's rule, so
// every step is full. Between steps the loop edits the KV cache: prefix truncation for a new prompt, and compaction
// (a slot leaving a gap among the busy slot ids has the highest busy slot move into it). Small steps (generation)
// decode on the JS thread when the runtime allows it (inline decode, below), or, on a GPU, the steps are pipelined
// (step-pipeline.ts): a step's continuing slots decode their next token before their generation loops have it. All
// native calls go through the port (native/port.ts).
import type { Token } from "node-llama-cpp";
import { DecodeTurns } from "./decode-turns.ts";
import type { NativeContext, NativeSampler, RowLogits } from "./native/port.ts";
import type { ModelPromptCache } from "./prompt-cache.ts";
import { SampleBatch } from "./sample-batch.ts";
import { SlotPool, type SlotMove } from "./slot-pool.ts";
import { movesStates, Slot, SlotStates, type Reuse } from "./slot-states.ts";

export { Slot };
import { StepFill, type DecodeStats, type StepFillOptions } from "./step-fill.ts";
import { Continuations, DROPPED, type ContinueFn } from "./step-pipeline.ts";
import type { Planned } from "./step-plan.ts";

/** Samples the token after the decode from the batch logit row given (with the sequence's own sampler). */
export type SampleFn = (batchLogitIndex: number) => Promise<number>;

/**
 * Verifies a draft (speculative decoding) from the logit rows of the token before it and of each drafted token, in
 * order: samples row after row while the token sampled is the next drafted one; resolves with the tokens sampled (the
 * drafted tokens accepted, then the first one that differs or follows them all). Rejects when no token was sampled.
 */
export type VerifyFn = (batchLogitIndexes: Uint32Array) => Promise<Token[]>;

/**
 * When a step decodes on the JS thread instead of a libuv worker (NativeContext.decodeBatchInline). With every core
 * computing, JS work overlapping a decode preempts a compute thread and stalls the others at the next barrier, so
 * inline decoding is faster (measurements: docs/engine.md). The JS thread is blocked for the whole decode, so only
 * small steps (generation) decode inline, and only while such steps are quick: with a big model on CPU they go back to
 * a worker, where the hand-offs cost next to nothing.
 */
export interface InlineDecodePolicy {
  /** Largest step (tokens) decoded inline. */
  maxTokens: number;
  /** Small steps slower than this (moving average) decode on a worker, so the event loop is never blocked longer. */
  maxStepMs: number;
}

export const INLINE_DECODE: InlineDecodePolicy = { maxTokens: 32, maxStepMs: 100 };

/** Most tokens one step decodes (in calls of at most the batch size): llama-server's default batch (n_batch). */
const MAX_STEP_TOKENS = 2048;

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

interface Pending {
  slot: Slot;
  /** Tokens not yet decoded (shrinks as a long prompt is decoded over several steps). */
  tokens: Token[];
  sample: SampleFn;
  resolve(token: Token): void;
  reject(err: unknown): void;
  /** A token with its draft (evaluateDraft): decoded whole, its last `rows` logit rows verified instead of sampled. */
  whole?: boolean;
  verify?: { rows: number; fn: VerifyFn; resolve(tokens: Token[]): void };
  /** Whether the token sampled for this item may be decoded before the generation loop has it (pipeline). */
  continues?: ContinueFn | undefined;
  /** A continuation's item: resolves true once its generation loop takes it, false when that left without it. */
  taken?: Promise<boolean>;
  /** The same, known now (undefined while neither happened). */
  took?: boolean;
}

/** What a finished item's row gave: its sampled token, the tokens a draft gave, or nothing (a dropped continuation). */
type SampleResult = number | Token[] | typeof DROPPED;

/** A finished item of a decode call with its row's result. */
interface Sampled {
  item: Pending;
  result: PromiseSettledResult<SampleResult>;
}

type Plan = Planned<Pending>[];

const tokensOf = (plan: Plan): number => plan.reduce((n, p) => n + p.processAmount, 0);
const slotIdOf = (item: Pending): number => item.slot.id;

export class SlotLoop {
  readonly native: NativeContext;
  private readonly pool: SlotPool<Slot>;
  private readonly fill: StepFill;
  private readonly batchSize: number;
  private readonly turns: DecodeTurns;
  private readonly onMove: ((ok: boolean) => void) | undefined;
  /** The slots' KV-state edits (cut, save, restore, move). */
  private readonly states: SlotStates;
  /** A step's sampling calls, made as one. */
  private readonly sampling: SampleBatch;
  /** Busy slots move down into gaps (release): unless switched off, until a move fails. */
  private moveSlots: boolean;
  private queue: Pending[] = [];
  private stepping = false;
  private scheduled = false;
  /** KV-cache edits waiting for the step in flight: the native memory must not change under a running decode. */
  private between: Array<() => void | Promise<void>> = [];
  /** The edits running now, if any. */
  private editing: Promise<void> | undefined;
  /** Settles when the step running now ends (with the pipeline, a decode may run after every request left). */
  private stepEnd: Promise<void> | undefined;
  private readonly inline: InlineDecodePolicy | undefined;
  /** Moving average of small steps' decode time (inline or not). */
  private smallStepMs = 0;
  /** Decode steps run inline and on a worker, so far; `pipelined`: those started with continuations. */
  readonly steps = { inline: 0, worker: 0, pipelined: 0 };
  /** The step pipeline, when on: the continuations waiting for their generation loops. */
  private readonly pipeline: Continuations<Pending> | undefined;
  private readonly onPipeline: SlotLoopOptions["onPipeline"];

  constructor(native: NativeContext, o: SlotLoopOptions) {
    this.native = native;
    this.batchSize = native.batchSize;
    this.pipeline = o.pipeline ? new Continuations<Pending>(() => this.fill.afterDecode()) : undefined;
    this.onPipeline = o.onPipeline;
    this.inline = !o.pipeline && o.inline && typeof native.decodeBatchInline === "function" ? o.inline : undefined;
    this.turns = o.turns ?? new DecodeTurns();
    this.fill = new StepFill(o.fill);
    this.moveSlots = o.moveSlots ?? true;
    this.onMove = o.onMove;
    this.states = new SlotStates(native, o.promptCache);
    this.sampling = new SampleBatch(native);
    const slots = Array.from({ length: o.parallel }, (_, id) => new Slot(id));
    this.pool = new SlotPool(slots, o.maxQueue, () => o.onPoolChange?.(this.pool.busy, this.pool.queued));
  }

  /** Whether small steps decode on the JS thread. */
  get inlineDecode(): boolean {
    return this.inline !== undefined;
  }

  /** Whether the steps are pipelined (step-pipeline.ts). */
  get pipelined(): boolean {
    return this.pipeline !== undefined;
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
   * A free slot for a request, preferring the one whose cache holds most of the prompt (`prefer`), else the one that
   * keeps the busy slots compact; waits in FIFO order when none is free (SlotPool.acquire).
   */
  acquire(
    signal: AbortSignal | undefined,
    prefer?: (slot: Slot) => number,
    held?: (slot: Slot) => number,
    restorable = 0,
  ): Promise<Slot> {
    return this.pool.acquire(signal, prefer, held, restorable);
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
    const held = (s: Slot) => s.tokens.length;
    const canSwap = movesStates(this.native);
    for (let move = this.pool.compact(held, canSwap); move; move = this.pool.compact(held, canSwap)) {
      this.relocate(move).then(
        () => this.onMove?.(true),
        (err: unknown) => {
          this.onMove?.(false);
          if (this.moveSlots) onMoveFailed(err);
          this.moveSlots = false;
        },
      );
    }
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
    const dropped = slot && this.pipeline?.drop(slot);
    if (dropped) {
      dropped.took = false;
      this.onPipeline?.("dropped");
      if (dropped.tokens.length > 0) {
        this.queue = this.queue.filter((q) => q !== dropped);
        dropped.reject(DROPPED);
      }
    }
    this.fill.leave();
  }

  /**
   * Await before queueing work (StepFill.gate): the slots of a step and newcomers queue the next step together. Not
   * for `slot`'s continuation (its token is queued or decoding already), nor while a pipelined step is in flight: the
   * next step starts from what is queued when its rows are sampled.
   */
  gate(slot?: Slot): Promise<void> | undefined {
    if (this.pipeline && (this.stepping || (slot && this.pipeline.has(slot)))) return undefined;
    return this.fill.gate();
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
    const taken = this.pipeline?.take(slot, tokens, (item) => {
      item.sample = sample;
      item.continues = continues;
      item.took = true;
    });
    if (taken) return taken;
    this.fill.beforeDecode();
    const result = new Promise<Token>((resolve, reject) => {
      this.queue.push({ slot, tokens: [...tokens], sample, resolve, reject, continues });
      this.schedule();
    });
    const arrived = () => this.fill.afterDecode();
    result.then(arrived, arrived);
    return result;
  }

  /**
   * Queues a token and the tokens drafted after it (speculative decoding), decoded together in one call; `verify` reads
   * the logit rows of all of them and resolves with the tokens sampled. The drafted tokens it did not accept are
   * dropped from the slot's KV cache before the next call: the slot then holds the token and the accepted ones.
   */
  evaluateDraft(slot: Slot, token: Token, draft: readonly Token[], verify: VerifyFn): Promise<Token[]> {
    this.fill.beforeDecode();
    const result = new Promise<Token[]>((resolve, reject) => {
      this.queue.push({
        slot,
        tokens: [token, ...draft],
        whole: true,
        sample: () => Promise.reject(new Error("a draft is verified, not sampled")),
        resolve: () => undefined,
        reject,
        verify: { rows: draft.length + 1, fn: verify, resolve },
      });
      this.schedule();
    });
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
    return this.betweenSteps(() => this.states.cut(slot, keepOf(slot.tokens)));
  }

  /**
   * A context shift, between steps: drops `discard` tokens after the first `keep` the slot holds and moves the rest
   * down (llama-server's, when generation reaches the context's end). False when the model's memory cannot.
   */
  async shift(slot: Slot, keep: number, discard: number): Promise<boolean> {
    let shifted = false;
    await this.betweenSteps(() => {
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
    return this.betweenSteps(() => this.states.reuse(slot, prompt, keepOf));
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
    const { busy, free, spare, swap } = move;
    return this.betweenSteps(async () => {
      if (swap) return this.states.swap(busy, free);
      // Without a spare, `free` is the one overwritten (it holds nothing).
      const target = spare ?? free;
      if (spare) {
        await this.states.copyInto(spare, free);
        // `free` keeps its history under the spare's old id; the spare takes the place to overwrite.
        [free.id, spare.id] = [spare.id, free.id];
      }
      await this.states.copyInto(target, busy);
      [busy.id, target.id] = [target.id, busy.id];
    });
  }

  /** Resolves when no edit and no step is running. The context waits before it is freed. */
  async drained(): Promise<void> {
    for (let busy = this.editing ?? this.stepEnd; busy; busy = this.editing ?? this.stepEnd) await busy;
  }

  /**
   * Decodes what is not a token run into the slot's sequence after what it holds (an image: `decode` gets the sequence
   * id and the position to start at, and encodes and decodes its embeddings), between steps and holding the runtime's
   * decode turn (an encode computes on every core too); the slot then holds `cells` for it. A failed decode leaves
   * the slot empty (what the sequence holds is unknown then).
   */
  decodeOther(slot: Slot, cells: readonly Token[], decode: (sequenceId: number, position: number) => Promise<void>) {
    return this.betweenSteps(async () => {
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
    void this.betweenSteps(() => {
      this.native.pauseThreadpool?.();
    });
  }

  /** Runs `edit` when no step is in flight, before the next step; edits run one at a time, in the order queued. */
  private betweenSteps<T = void>(edit: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.between.push(async () => {
        try {
          resolve(await edit());
        } catch (err) {
          reject(err);
        }
      });
      if (!this.stepping) this.runEdits();
    });
  }

  /** Runs the queued edits (steps wait meanwhile), then schedules the next step. */
  private runEdits(): void {
    this.stepping = true;
    this.editing = (async () => {
      while (this.between.length > 0) await this.between.shift()!();
      this.editing = undefined;
      this.stepping = false;
      this.schedule();
    })();
  }

  // ---- decode steps ----

  private schedule(): void {
    if (this.stepping || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    this.fill.whenFull(() => {
      // A step that may block the JS thread starts on a later macrotask: the consumers write out the text of the last
      // step first, and the event loop polls for I/O between any two steps.
      if (this.inline) setImmediate(() => this.startStep());
      else this.startStep();
    });
  }

  private startStep(): void {
    this.scheduled = false;
    void this.step();
  }

  private async step(): Promise<void> {
    if (this.stepping || this.queue.length === 0) return;
    this.stepping = true;
    let ended!: () => void;
    this.stepEnd = new Promise((resolve) => (ended = resolve));
    const turn = this.turns.take();
    if (turn) await turn;
    try {
      // One step: a decode call of what StepFill plans, and, when that call carried no generating slot, further calls
      // for the prompts left over. A generation step takes no more promise hops than its one call. With the pipeline,
      // a step whose continuations start the next one at once goes on with that one.
      let plan = this.fill.planStep(this.queue, this.batchSize, slotIdOf);
      let call = this.decodeCall(plan);
      for (;;) {
        const sampled = await call;
        if (!sampled) break;
        const stepTokens = tokensOf(plan);
        const more = this.nextCall(stepTokens);
        if (more.length > 0) {
          this.settle(sampled);
          await this.continueStep(stepTokens, more);
          break;
        }
        const next = this.continueOrSettle(sampled);
        if (!next) break;
        ({ plan, call } = next);
      }
    } finally {
      this.turns.give();
      this.stepEnd = undefined;
      ended();
    }
    this.endStep();
  }

  /**
   * The further calls of a step of prompts after its first `stepTokens`; the finished prompts' first tokens go out
   * before each.
   */
  private async continueStep(stepTokens: number, more: Plan): Promise<void> {
    for (let plan = more; plan.length > 0; plan = this.nextCall(stepTokens)) {
      // The next call may block the JS thread (inline decode).
      await new Promise((r) => setImmediate(r));
      const sampled = await this.decodeCall(plan);
      if (!sampled) return;
      this.settle(sampled);
      stepTokens += tokensOf(plan);
    }
  }

  /** The step's next call after `stepTokens` tokens (none: the step ends), as StepFill.planContinuation plans it. */
  private nextCall(stepTokens: number): Plan {
    return this.fill.planContinuation(this.queue, this.batchSize, stepTokens, MAX_STEP_TOKENS, slotIdOf);
  }

  /**
   * With the pipeline: the sampled tokens that may continue are queued at once (continuations), and when that makes
   * the next step full (StepFill.full: every other active sequence has queued), the next step's decode starts before
   * the sampled tokens are handed over, so the generation loops' work for them overlaps it. Never with KV-cache edits
   * waiting (they run between steps), a draft verified (its rejected tokens leave the KV cache first) or another
   * context waiting for its decode turn. Settles the sampled items in every case; returns the next step if it started.
   */
  private continueOrSettle(sampled: Sampled[]): { plan: Plan; call: Promise<Sampled[] | undefined> } | undefined {
    const pipeline = this.pipeline;
    if (!pipeline || this.between.length > 0 || this.turns.contended || sampled.some((s) => s.item.verify)) {
      this.settle(sampled);
      return undefined;
    }
    let continued = 0;
    for (const { item, result } of sampled) {
      const token = result.status === "fulfilled" ? result.value : DROPPED;
      if (typeof token !== "number" || token < 0 || !item.continues?.(token as Token)) continue;
      this.fill.beforeDecode();
      this.queue.push(pipeline.add(item.slot, token as Token, (parts) => ({ ...parts, sample: item.sample })));
      continued++;
    }
    let next: { plan: Plan; call: Promise<Sampled[] | undefined> } | undefined;
    if (continued > 0 && this.fill.full(sampled.length)) {
      this.steps.pipelined++;
      this.onPipeline?.("step");
      const plan = this.fill.planStep(this.queue, this.batchSize, slotIdOf);
      next = { plan, call: this.decodeCall(plan) };
    }
    this.settle(sampled);
    return next;
  }

  /** Hands each sampled item its token (or the tokens a draft gave, or the error). */
  private settle(sampled: Sampled[]): void {
    for (const { item, result } of sampled) {
      if (result.status === "rejected") item.reject(result.reason);
      else if (result.value === DROPPED) item.reject(DROPPED);
      else if (item.verify) this.settleDraft(item, item.verify, result.value as Token[]);
      else if ((result.value as number) < 0) item.reject(new Error("failed to sample the next token"));
      else item.resolve(result.value as Token);
    }
  }

  /**
   * Decodes the plan and samples each finished item's next token (a continuation's once its generation loop took it:
   * it samples with that loop's state; none for one dropped); undefined when the decode failed. The decode starts
   * before this returns its promise.
   */
  private async decodeCall(plan: Plan): Promise<Sampled[] | undefined> {
    const finished: Array<{ item: Pending; logits: Uint32Array }> = [];
    try {
      const total = tokensOf(plan);
      this.native.initBatch(total);
      for (const { item, processAmount } of plan) {
        const done = processAmount === item.tokens.length;
        const part = item.tokens.slice(0, processAmount);
        const rows = item.verify?.rows ?? 1;
        const logits = this.native.addToBatch(
          item.slot.id,
          item.slot.tokens.length,
          Uint32Array.from(part),
          !done
            ? new Uint32Array(0)
            : rows === 1
              ? Uint32Array.of(processAmount - 1)
              : Uint32Array.from({ length: rows }, (_, i) => processAmount - rows + i),
        );
        item.slot.tokens.push(...part);
        item.tokens = item.tokens.slice(processAmount);
        if (done) finished.push({ item, logits });
      }
      this.queue = this.queue.filter((q) => q.tokens.length > 0);
      await this.decode(total);
    } catch (err) {
      // A failed step fails every item in it; their slots no longer know what the KV cache holds.
      for (const { item } of plan) {
        this.native.disposeSequence(item.slot.id);
        item.slot.tokens.length = 0;
        item.reject(err);
      }
      this.queue = this.queue.filter((q) => !plan.some((p) => p.item === q));
      return undefined;
    }
    // Sampling reads the decode's logits: all of it before the next call. The rows' plain sampling calls are one; a
    // continuation's loop that has not taken it yet has its row sampled when it does, in a call of its own.
    const sample = ({ item, logits }: (typeof finished)[number]): Promise<SampleResult> =>
      item.verify ? item.verify.fn(logits) : item.sample(logits[0]!);
    const results = await Promise.allSettled(
      this.sampling.collect(() =>
        finished.map((f) =>
          f.item.took === false
            ? DROPPED
            : f.item.taken && f.item.took === undefined
              ? f.item.taken.then((taken) => (taken ? sample(f) : DROPPED))
              : sample(f),
        ),
      ),
    );
    return finished.map(({ item }, i) => ({ item, result: results[i]! }));
  }

  /** Drops a verified draft's rejected tokens from the slot (before the next call) and hands over the sampled ones. */
  private settleDraft(item: Pending, verify: NonNullable<Pending["verify"]>, tokens: Token[]): void {
    const slot = item.slot;
    // `tokens` are the accepted drafted tokens and one more: the drafted tokens after the accepted ones are dropped.
    const keep = slot.tokens.length - (verify.rows - tokens.length);
    if (keep < slot.tokens.length && !this.native.removeTokens(slot.id, keep, slot.tokens.length)) {
      this.native.disposeSequence(slot.id);
      slot.tokens.length = 0;
      item.reject(new Error("the model's memory cannot drop rejected draft tokens"));
      return;
    }
    slot.tokens.length = keep;
    verify.resolve(tokens);
  }

  private async decode(tokens: number): Promise<void> {
    const small = this.inline !== undefined && tokens <= this.inline.maxTokens;
    const started = small ? performance.now() : 0;
    if (small && this.smallStepMs <= this.inline!.maxStepMs) {
      this.steps.inline++;
      this.native.decodeBatchInline!();
    } else {
      this.steps.worker++;
      await this.native.decodeBatch();
    }
    if (small)
      this.smallStepMs =
        this.smallStepMs === 0
          ? performance.now() - started
          : 0.8 * this.smallStepMs + 0.2 * (performance.now() - started);
  }

  private endStep(): void {
    if (this.between.length > 0) this.runEdits();
    else {
      this.stepping = false;
      this.schedule();
    }
  }
}
