// One decode call of a step (step-runner.ts decides when, step-fill.ts what): lays each planned item's tokens into the
// batch after what its slot holds, decodes the batch (small steps on the JS thread where the runtime allows it, else on
// a worker), samples each finished item's row (the rows' plain sampling calls as one: sample-batch.ts) and settles the
// items with their tokens. A continuation's row (step-pipeline.ts) is sampled once its generation loop took it.
import type { Token } from "node-llama-cpp";
import type { NativeContext } from "./native/port.ts";
import type { SampleBatch } from "./sample-batch.ts";
import type { Slot } from "./slot-states.ts";
import { DROPPED, type ContinueFn } from "./step-pipeline.ts";
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

/** A sequence's work queued for a decode step. */
export interface Queued {
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
export interface Sampled {
  item: Queued;
  result: PromiseSettledResult<SampleResult>;
}

export type Plan = Planned<Queued>[];

export const tokensOf = (plan: Plan): number => plan.reduce((n, p) => n + p.processAmount, 0);

/** Decode steps run inline and on a worker, so far; `pipelined`: those started with continuations. */
export interface StepCounts {
  inline: number;
  worker: number;
  pipelined: number;
}

export interface StepCallOptions {
  /** A step's sampling calls, made as one. */
  sampling: SampleBatch;
  /** Decode small steps on the JS thread (where the native context can). */
  inline: InlineDecodePolicy | undefined;
  counts: StepCounts;
  /** Takes out of the step queue the items that `keep` refuses (those decoded to their end, or failed). */
  unqueue: (keep: (q: Queued) => boolean) => void;
}

export class StepCalls {
  private readonly native: NativeContext;
  private readonly sampling: SampleBatch;
  private readonly inline: InlineDecodePolicy | undefined;
  /** Moving average of small steps' decode time (inline or not). */
  private smallStepMs = 0;
  private readonly counts: StepCounts;
  private readonly unqueue: StepCallOptions["unqueue"];

  constructor(native: NativeContext, o: StepCallOptions) {
    this.native = native;
    this.sampling = o.sampling;
    this.inline = o.inline;
    this.counts = o.counts;
    this.unqueue = o.unqueue;
  }

  /** Whether small steps decode on the JS thread. */
  get inlineDecode(): boolean {
    return this.inline !== undefined;
  }

  /**
   * Decodes the plan and samples each finished item's next token (a continuation's once its generation loop took it:
   * it samples with that loop's state; none for one dropped); undefined when the decode failed. The decode starts
   * before this returns its promise.
   */
  async call(plan: Plan): Promise<Sampled[] | undefined> {
    const finished: Array<{ item: Queued; logits: Uint32Array }> = [];
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
      this.unqueue((q) => q.tokens.length > 0);
      await this.decode(total);
    } catch (err) {
      // A failed step fails every item in it; their slots no longer know what the KV cache holds.
      for (const { item } of plan) {
        this.native.disposeSequence(item.slot.id);
        item.slot.tokens.length = 0;
        item.reject(err);
      }
      this.unqueue((q) => !plan.some((p) => p.item === q));
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

  /** Hands each sampled item its token (or the tokens a draft gave, or the error). */
  settle(sampled: Sampled[]): void {
    for (const { item, result } of sampled) {
      if (result.status === "rejected") item.reject(result.reason);
      else if (result.value === DROPPED) item.reject(DROPPED);
      else if (item.verify) this.settleDraft(item, item.verify, result.value as Token[]);
      else if ((result.value as number) < 0) item.reject(new Error("failed to sample the next token"));
      else item.resolve(result.value as Token);
    }
  }

  /** Drops a verified draft's rejected tokens from the slot (before the next call) and hands over the sampled ones. */
  private settleDraft(item: Queued, verify: NonNullable<Queued["verify"]>, tokens: Token[]): void {
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

  /** The decode: inline for a small step while such steps are quick, else on a worker (step-probe.ts wraps it). */
  private async decode(tokens: number): Promise<void> {
    const small = this.inline !== undefined && tokens <= this.inline.maxTokens;
    const started = small ? performance.now() : 0;
    if (small && this.smallStepMs <= this.inline!.maxStepMs) {
      this.counts.inline++;
      this.native.decodeBatchInline!();
    } else {
      this.counts.worker++;
      await this.native.decodeBatch();
    }
    if (small)
      this.smallStepMs =
        this.smallStepMs === 0
          ? performance.now() - started
          : 0.8 * this.smallStepMs + 0.2 * (performance.now() - started);
  }
}
