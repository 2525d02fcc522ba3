// The engine's native port: the only calls the scheduler (slot-loop.ts) and the token sampler make on the inference
// runtime. One implementation runs on node-llama-cpp's addon (node-llama-cpp.ts, where every touch of its private
// internals and of Gantry's addon patch lives); a recording fake (fake.ts) runs the scheduler's unit tests. Upgrading
// node-llama-cpp, or putting another runtime behind the engine (docs/engine.md), is a change behind this port.
import type { LlamaGrammarEvaluationState } from "node-llama-cpp";

/**
 * A sampler chain for one sequence, configured per request. Configuring is not free: configure once and sample many
 * times (the native sampler takes each token it samples into its repeat-penalty window itself).
 */
export interface NativeSampler {
  applyConfig(config: SamplerConfig): void;
  dispose(): void;
}

/** A sampler chain's settings, as llama.cpp's sampler options name them. An empty config is a greedy chain. */
export interface SamplerConfig {
  temperature?: number;
  minP?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  repeatPenalty?: number;
  /** The repeat-penalty window, in tokens. */
  repeatPenaltyMaxTokens?: number;
  repeatPenaltyPresencePenalty?: number;
  repeatPenaltyFrequencyPenalty?: number;
  /** The window's tokens so far (the sampler adds the tokens it samples). */
  repeatPenaltyTokens?: Uint32Array;
  /** A grammar's evaluation state: only tokens the grammar accepts are sampled. */
  grammar?: LlamaGrammarEvaluationState;
}

/** Logits read from a row: flat (token id, logit) pairs, the top ones first (most likely first), then asked ones. */
export interface RowLogits {
  pairs: number[];
  /** log(sum(exp(logit))) over the whole row: a token's log probability is its logit minus this. */
  logSumExp: number;
}

/**
 * One llama.cpp context with `parallel` sequences (one KV stream each): the batch, decode, sampling and KV-cache calls
 * llama-server's slot loop makes. Batch calls are synchronous; a decode reads the batch built since initBatch.
 */
export interface NativeContext {
  /** Most tokens one decode call takes (llama.cpp's n_batch). */
  readonly batchSize: number;
  /** Threads of the persistent threadpool attached to the context (0 = none: ggml starts threads per decode). */
  readonly threadpoolThreads: number;
  /** Plain tokens are sampled on the calling thread (patched addon), without two thread hand-offs per token. */
  readonly inlineSampling: boolean;
  initBatch(size: number): void;
  /** Returns the batch logit index of each token index in `logitIndexes`. */
  addToBatch(
    sequenceId: number,
    firstTokenSequenceIndex: number,
    tokens: Uint32Array,
    logitIndexes: Uint32Array,
  ): Uint32Array;
  /** Decodes the batch on a worker thread. */
  decodeBatch(): Promise<void>;
  /** The same decode on the calling thread, returning when done (throws on failure); only where the runtime can. */
  decodeBatchInline?(): void;
  /**
   * Puts the persistent threadpool's threads to sleep until the next decode, which wakes them (patched addon). Between
   * two decodes they otherwise poll for the next one on a core (ggml's poll level 50): worth it between generation
   * steps, a waste of a core while the context is idle or something else computes (an image encode). Only while no
   * decode on the context is in flight. Returns whether there was a pool to pause.
   */
  pauseThreadpool?(): boolean;
  /** Samples from a logit row of the last decode; -1 = no token. Settled at once for plain sampling (patched addon). */
  sampleToken(batchLogitIndex: number, sampler: NativeSampler): Promise<number>;
  /**
   * Samples row i of the last decode with samplers[i], in one call, as one plain sampleToken call per row would (the
   * same tokens): the rows are spread over the threadpool's threads (patched addon). Each result is the row's token
   * (-1 = none) or its failure. Between decodes only.
   */
  sampleTokens?(batchLogitIndexes: Uint32Array, samplers: readonly NativeSampler[]): Array<number | Error>;
  /**
   * The raw logits of `tokens` and of the `top` most likely tokens in a logit row of the last decode, with the row's
   * log-sum-exp (for log probabilities). Read through `sampler`, whose chain must leave the logits as they are
   * (a greedy one).
   */
  tokenLogits(batchLogitIndex: number, sampler: NativeSampler, tokens: number[], top: number): Promise<RowLogits>;
  /** A new sampler chain for this context's model. */
  createSampler(): NativeSampler;
  /** Drops everything a sequence holds. */
  disposeSequence(sequenceId: number): void;
  /**
   * Makes the target sequence a copy of the source (with one KV stream per sequence: the whole stream, at the next
   * decode).
   */
  copySequence(targetSequenceId: number, sourceSequenceId: number): Promise<void>;
  /** Drops cells [start, end) of a sequence; false when the model's memory cannot drop part of a sequence. */
  removeTokens(sequenceId: number, start: number, end: number): boolean;
  /**
   * A copy of what a sequence holds (its KV cells with their positions), in host memory (patched addon). Only while no
   * decode is in flight.
   */
  saveSequence?(sequenceId: number): Uint8Array;
  /**
   * Replaces what a sequence holds with a saved state; false when the runtime refuses it (another model's or context
   * shape's state, more cells than fit), and the sequence is empty then. Only while no decode is in flight.
   */
  restoreSequence?(sequenceId: number, state: Uint8Array): boolean;
  /** Moves cells [start, end) of a sequence by `delta` positions (a context shift, after removeTokens). */
  shiftTokens(sequenceId: number, start: number, end: number, delta: number): void;
}
