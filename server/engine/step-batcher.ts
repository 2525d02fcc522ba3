// Decode steps over one context's sequences, driven directly on node-llama-cpp's native context (as llama-server's slot
// loop drives llama_decode): each step carries every generating sequence and whole prompts shortest first (in sequence
// id
// order), and each finished item's next token is sampled right after the decode. A step of prompts alone goes on with
// further calls for the prompts left (DecodeSync.continueStep), so a burst larger than the batch is one step.
// node-llama-cpp's evaluate and dispatch layers cost about 0.5 ms of JS per token between two decodes on one stream;
// this
// costs a tenth of it.
// When to dispatch a step is DecodeSync's call (its dispatch schedule), so steps stay full as with node-llama-cpp's.
// Small steps (generation) decode on the JS thread when the patched addon allows it (inline decode, below).
import type { BatchItem, Token } from "node-llama-cpp";
import type { DecodeSync } from "./decode-sync.ts";
import type { NativeSamplerHandle, RowLogits } from "./native-sampler.ts";

/** The native context's methods used here (node-llama-cpp's internal AddonContext, same calls its JS layer makes). */
export interface NativeContext {
  initBatch(size: number): void;
  /** Returns the batch logit index of each token index in `logitIndexes`. */
  addToBatch(
    sequenceId: number,
    firstTokenSequenceIndex: number,
    tokens: Uint32Array,
    logitIndexes: Uint32Array,
  ): Uint32Array;
  decodeBatch(): Promise<void>;
  /** Patched addon only: the same decode on the calling thread, returning when done (throws on failure). */
  decodeBatchInline?(): void;
  /**
   * Samples from a logit row of the last decode; -1 = no token. Settled at once for plain sampling (patched addon).
   * With `logits` arguments (what node-llama-cpp's own evaluate passes for `logits` and `totalLogitWeight`) it resolves
   * with a NativeSampleResult instead of the token.
   */
  sampleToken(
    batchLogitIndex: number,
    sampler: NativeSamplerHandle,
    ...logits: [] | NativeLogitsArgs
  ): Promise<number | NativeSampleResult>;
  disposeSequence(sequenceId: number): void;
  /**
   * Makes the target sequence a copy of the source (with one KV stream per sequence: the whole stream, at the next
   * decode).
   */
  copySequenceStateFromOtherSequence(targetSequenceId: number, sourceSequenceId: number): Promise<number>;
  /** False when the model's memory cannot drop part of a sequence (the caller then clears it all). */
  removeTokenCellsFromSequence(sequenceId: number, start: number, end: number): boolean;
}

/** One sequence's KV cache: the tokens it holds, in position order. */
export class Slot {
  /** The llama.cpp sequence id; two slots trade ids when one moves into the other's place (StepBatcher.relocate). */
  id: number;
  readonly tokens: Token[] = [];

  constructor(id: number) {
    this.id = id;
  }
}

/**
 * probabilities (false), confidence (false), logits: [token ids to report, include max, include min, include selected,
 * top n], total logit weight (true).
 */
type NativeLogitsArgs = [false, false, [number[], boolean, boolean, boolean, number], true];

/** [token, probabilities, confidence, flat (token id, logit) pairs, sum of exp(logit - max logit) over the row]. */
type NativeSampleResult = [number, unknown, unknown, number[] | undefined, number | undefined];

/** Samples the token after the decode from the batch logit row given (with the sequence's own sampler). */
export type SampleFn = (batchLogitIndex: number) => Promise<number>;

/**
 * Decode steps take turns across the contexts of one runtime: every context decodes with all the runtime's threads, and
 * two at once would oversubscribe the cores (node-llama-cpp's dispatcher split threads between contexts for the same
 * reason). Uncontended, taking a turn costs nothing.
 */
export class DecodeTurns {
  private held = false;
  private waiting: Array<() => void> = [];

  take(): Promise<void> | undefined {
    if (!this.held) {
      this.held = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

const turnsByRuntime = new WeakMap<object, DecodeTurns>();

/** The turns shared by every context of a runtime (a node-llama-cpp Llama instance). */
export function decodeTurnsFor(runtime: object): DecodeTurns {
  let turns = turnsByRuntime.get(runtime);
  if (!turns) turnsByRuntime.set(runtime, (turns = new DecodeTurns()));
  return turns;
}

/**
 * When a step decodes on the JS thread instead of a libuv worker (the patched addon's decodeBatchInline). With every
 * core
 * computing, JS work overlapping a decode preempts a compute thread and stalls the others at the next barrier: measured
 * on 2 cores, 0.5 ms of JS per token during the decode slowed single-stream generation by 1.25 ms per token, while
 * inline decoding made it 5–10% faster (JS work then runs between decodes, and the two thread hand-offs are gone).
 * The JS thread is blocked for the whole decode, so only small steps (generation) decode inline, and only while such
 * steps are quick: with a big model on CPU they go back to a worker, where the hand-offs cost next to nothing.
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

interface Pending extends BatchItem {
  slot: Slot;
  /** Tokens not yet decoded (shrinks as a long prompt is decoded over several steps). */
  tokens: Token[];
  sample: SampleFn;
  resolve(token: Token): void;
  reject(err: unknown): void;
}

type Plan = Array<{ item: Pending; processAmount: number }>;

const tokensOf = (plan: Plan): number => plan.reduce((n, p) => n + p.processAmount, 0);

export class StepBatcher {
  private readonly native: NativeContext;
  private readonly batchSize: number;
  private readonly sync: DecodeSync;
  private readonly turns: DecodeTurns;
  private queue: Pending[] = [];
  private stepping = false;
  private scheduled = false;
  /** KV-cache edits waiting for the step in flight: the native memory must not change under a running decode. */
  private between: Array<() => void | Promise<void>> = [];
  /** The edits running now, if any. */
  private editing: Promise<void> | undefined;
  private readonly inline: InlineDecodePolicy | undefined;
  /** Moving average of small steps' decode time (inline or not). */
  private smallStepMs = 0;
  /** Decode steps run inline and on a worker, so far. */
  readonly steps = { inline: 0, worker: 0 };

  /** `inline`: decode small steps on the JS thread (needs the patched addon; ignored without it). */
  constructor(
    native: NativeContext,
    batchSize: number,
    sync: DecodeSync,
    turns: DecodeTurns = new DecodeTurns(),
    inline?: InlineDecodePolicy,
  ) {
    this.native = native;
    this.inline = inline && typeof native.decodeBatchInline === "function" ? inline : undefined;
    this.turns = turns;
    this.batchSize = batchSize;
    this.sync = sync;
    sync.sequenceIdOf = (item) => (item as Pending).slot.id;
  }

  /** Whether small steps decode on the JS thread. */
  get inlineDecode(): boolean {
    return this.inline !== undefined;
  }

  /** The native sampling call, for the sequences' samplers (inside their SampleFn, after a step's decode). */
  readonly sampleToken = (batchLogitIndex: number, sampler: NativeSamplerHandle): Promise<number> =>
    this.native.sampleToken(batchLogitIndex, sampler) as Promise<number>;

  /**
   * The raw logits of `tokens` and of the `top` most likely tokens in a logit row of the last decode, with the row's
   * log-sum-exp (for log probabilities). Read through `sampler`, whose chain must leave the logits as they are (a
   * greedy one). Like sampleToken, only inside a SampleFn.
   */
  readonly tokenLogits = async (
    batchLogitIndex: number,
    sampler: NativeSamplerHandle,
    tokens: number[],
    top: number,
  ): Promise<RowLogits> => {
    const [, , , pairs, weight] = (await this.native.sampleToken(
      batchLogitIndex,
      sampler,
      false,
      false,
      [tokens, false, false, false, Math.max(1, top)],
      true,
    )) as NativeSampleResult;
    if (!pairs || pairs.length < 2 || weight === undefined) throw new Error("the engine returned no logits");
    // The top candidates come first, sorted by logit: the first one's is the row's maximum.
    return { pairs, logSumExp: pairs[1]! + Math.log(weight) };
  };

  /** Queues `tokens` after what the slot holds; resolves with the token sampled after the last of them. */
  evaluate(slot: Slot, tokens: Token[], sample: SampleFn): Promise<Token> {
    if (tokens.length === 0) return Promise.reject(new Error("nothing to evaluate"));
    return new Promise<Token>((resolve, reject) => {
      this.queue.push({ slot, tokens: [...tokens], logits: [], evaluationPriority: 5, sample, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Drops what the slot holds from `keepOf(tokens it holds)` on (all of it when the model's memory cannot drop a part).
   * Runs when no step is in flight (at once, or right after the step in flight), before the next step, after the edits
   * queued before it: `keepOf` sees what the slot holds then.
   */
  truncate(slot: Slot, keepOf: (held: readonly Token[]) => number): Promise<void> {
    return this.betweenSteps(() => {
      const keep = keepOf(slot.tokens);
      if (keep >= slot.tokens.length) return;
      if (keep <= 0 || !this.native.removeTokenCellsFromSequence(slot.id, keep, slot.tokens.length)) {
        this.native.disposeSequence(slot.id);
        slot.tokens.length = 0;
      } else slot.tokens.length = keep;
    });
  }

  /**
   * Moves what `from` holds into `to`'s sequence and the two slots trade sequence ids, between steps: `from` goes on
   * generating under `to`'s old id, and `to` (free) keeps what `from` held under `from`'s old id (still a valid cache).
   * With one KV stream per sequence, llama.cpp copies the whole stream at the next decode (16–23 MB for the bench
   * models); a step spanning a gap in the busy ids costs an extra pass over the weights every token.
   */
  relocate(from: Slot, to: Slot): Promise<void> {
    return this.betweenSteps(async () => {
      try {
        await this.native.copySequenceStateFromOtherSequence(to.id, from.id);
      } catch (err) {
        // Both keep their ids; what `to` holds is unknown now.
        this.native.disposeSequence(to.id);
        to.tokens.length = 0;
        throw err;
      }
      [from.id, to.id] = [to.id, from.id];
      to.tokens.length = 0;
      to.tokens.push(...from.tokens);
    });
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

  /** Runs `edit` when no step is in flight, before the next step; edits run one at a time, in the order queued. */
  private betweenSteps(edit: () => void | Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.between.push(async () => {
        try {
          await edit();
          resolve();
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

  /**
   * Resolves when no edit is running (with no step in flight: none is queued either). The context waits before it is
   * freed.
   */
  async drained(): Promise<void> {
    while (this.editing) await this.editing;
  }

  private schedule(): void {
    if (this.stepping || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    this.sync.dispatchSchedule(() => {
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
    const turn = this.turns.take();
    if (turn) await turn;
    try {
      // One step: a decode call of what DecodeSync plans, and, when that call carried no generating sequence, further
      // calls for the prompts left over. A generation step takes no more promise hops than its one call.
      const first = this.sync.prioritize({ items: this.queue, size: this.batchSize }) as Plan;
      if (await this.decodeCall(first)) {
        const firstTokens = tokensOf(first);
        const more = this.nextCall(firstTokens);
        if (more.length > 0) await this.continueStep(firstTokens, more);
      }
    } finally {
      this.turns.give();
    }
    this.endStep();
  }

  /**
   * The further calls of a step of prompts after its first `stepTokens` (DecodeSync.continueStep); the finished
   * prompts' first tokens go out before each.
   */
  private async continueStep(stepTokens: number, more: Plan): Promise<void> {
    for (let plan = more; plan.length > 0; plan = this.nextCall(stepTokens)) {
      // The next call may block the JS thread (inline decode).
      await new Promise((r) => setImmediate(r));
      if (!(await this.decodeCall(plan))) return;
      stepTokens += tokensOf(plan);
    }
  }

  /** The step's next call after `stepTokens` tokens (none: the step ends), as DecodeSync.continueStep plans it. */
  private nextCall(stepTokens: number): Plan {
    return this.sync.continueStep(this.queue, this.batchSize, stepTokens, MAX_STEP_TOKENS) as Plan;
  }

  /** Decodes the plan and samples each finished item's next token; false when the decode failed. */
  private async decodeCall(plan: Plan): Promise<boolean> {
    const finished: Array<{ item: Pending; logitIndex: number }> = [];
    try {
      const total = tokensOf(plan);
      this.native.initBatch(total);
      for (const { item, processAmount } of plan) {
        const done = processAmount === item.tokens.length;
        const part = item.tokens.slice(0, processAmount);
        const logits = this.native.addToBatch(
          item.slot.id,
          item.slot.tokens.length,
          Uint32Array.from(part),
          done ? Uint32Array.of(processAmount - 1) : new Uint32Array(0),
        );
        item.slot.tokens.push(...part);
        item.tokens = item.tokens.slice(processAmount);
        if (done) finished.push({ item, logitIndex: logits[0]! });
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
      return false;
    }
    // Sampling reads the decode's logits: all of it before the next call.
    const sampled = await Promise.allSettled(finished.map(({ item, logitIndex }) => item.sample(logitIndex)));
    finished.forEach(({ item }, i) => {
      const r = sampled[i]!;
      if (r.status === "rejected") item.reject(r.reason);
      else if (r.value < 0) item.reject(new Error("failed to sample the next token"));
      else item.resolve(r.value as Token);
    });
    return true;
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
