// A sequence's token sampler on node-llama-cpp's native sampler (the AddonSampler its evaluate path creates),
// configured
// from Ollama's options. The config is applied once per request: the native sampleToken takes every token it samples
// into the repeat-penalty window itself, so while the sequence grows by exactly those tokens there is nothing to update
// (node-llama-cpp's own path re-applies the whole config per token, which the native side then finds unchanged).
// With log probabilities asked for, a second native sampler with a greedy chain (which leaves the logits as they are)
// reads the sampled token's raw logit, the top alternatives and the row's log-sum-exp after each sampling call: the
// log-softmax of the raw logits, as Ollama (llama-server's n_probs) reports them. Requests without them never touch it.
import type { LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";
import { penaltiesOff, type ResolvedSampling } from "./sampling.ts";

/** Logits read from a row: flat (token id, logit) pairs, the top ones first (most likely first), then asked ones. */
export interface RowLogits {
  pairs: number[];
  /** log(sum(exp(logit))) over the whole row: a token's log probability is its logit minus this. */
  logSumExp: number;
}

/** node-llama-cpp's native sampler (internal AddonSampler). */
export interface NativeSamplerHandle {
  applyConfig(config: Record<string, unknown>): void;
  dispose(): void;
}

/** The native context's sampling call: resolves with the token (-1 = none). */
export type NativeSampleToken = (batchLogitIndex: number, sampler: NativeSamplerHandle) => Promise<number>;

/** Reads logits of a decoded row through a sampler (StepBatcher.tokenLogits). */
export type NativeTokenLogits = (
  batchLogitIndex: number,
  sampler: NativeSamplerHandle,
  tokens: number[],
  top: number,
) => Promise<RowLogits>;

/** A sampled token's log probability and the `top` most likely tokens at its position (token ids). */
export interface PositionLogprobs {
  token: number;
  logprob: number;
  top: Array<{ token: number; logprob: number }>;
}

/** Log probabilities from a row's logits (RowLogits: the top pairs first, then the sampled token's). Pure. */
export function positionLogprobs(row: RowLogits, token: number, top: number): PositionLogprobs {
  const { pairs, logSumExp } = row;
  const topPairs = Math.max(1, top);
  let logit: number | undefined;
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === token) logit = pairs[i + 1]!;
  if (logit === undefined) throw new Error(`no logit for token ${token}`);
  const alternatives: PositionLogprobs["top"] = [];
  for (let i = 0; i < Math.min(top, topPairs) * 2 && i < pairs.length; i += 2)
    alternatives.push({ token: pairs[i]!, logprob: pairs[i + 1]! - logSumExp });
  return { token, logprob: logit - logSumExp, top: alternatives };
}

/**
 * The sampler config node-llama-cpp's _resolveSamplerConfig would build for these options, without the penalty window.
 */
export function samplerConfig(
  s: ResolvedSampling,
  seed: number,
  window: number,
  grammarState: unknown,
): Record<string, unknown> {
  return {
    temperature: s.temperature,
    minP: s.minP,
    topK: s.topK,
    topP: s.topP,
    seed,
    ...(penaltiesOff(s)
      ? {}
      : {
          repeatPenalty: s.repeatPenalty,
          repeatPenaltyMaxTokens: window,
          repeatPenaltyPresencePenalty: s.presencePenalty,
          repeatPenaltyFrequencyPenalty: s.frequencyPenalty,
        }),
    ...(grammarState !== undefined ? { grammarEvaluationState: grammarState } : {}),
  };
}

/** node-llama-cpp internals: a new native sampler for the model (what its LlamaSampler creates). */
function newNativeSampler(model: LlamaModel): NativeSamplerHandle {
  const internal = model as unknown as {
    _llama: { _bindings: { AddonSampler: new (m: unknown) => NativeSamplerHandle } };
    _model: unknown;
  };
  return new internal._llama._bindings.AddonSampler(internal._model);
}

export class NativeSampler {
  private readonly handle: NativeSamplerHandle;
  /** The logit reader and how many alternatives to report, when log probabilities were asked for. */
  private readonly logprobs: { reader: NativeSamplerHandle; top: number } | undefined;
  private sampled: PositionLogprobs | undefined;
  private readonly config: Record<string, unknown>;
  private readonly penalties: boolean;
  private readonly window: number;
  /**
   * The history length the native sampler's state matches once the token it last sampled is appended (-1: none yet).
   */
  private nextLength = -1;

  constructor(
    model: LlamaModel,
    sampling: ResolvedSampling,
    seed: number,
    window: number,
    grammar: LlamaGrammarEvaluationState | undefined,
    logprobsTop?: number,
  ) {
    this.handle = newNativeSampler(model);
    if (logprobsTop !== undefined) {
      // No temperature in the config: a greedy chain, which leaves the candidates' logits raw.
      const reader = newNativeSampler(model);
      reader.applyConfig({});
      this.logprobs = { reader, top: logprobsTop };
    }
    this.config = samplerConfig(
      sampling,
      seed,
      window,
      (grammar as unknown as { _state?: unknown } | undefined)?._state,
    );
    this.penalties = !penaltiesOff(sampling);
    this.window = window;
  }

  /**
   * Samples from the decode's logit row `batchLogitIndex`; `history` is the sequence so far (for repeat penalties): the
   * prompt, then each token this sampler returned, in order. Any other history gets the whole config applied again.
   */
  sample(sampleToken: NativeSampleToken, batchLogitIndex: number, history: readonly Token[]): Promise<number> {
    if (history.length !== this.nextLength) {
      if (this.penalties) this.config.repeatPenaltyTokens = Uint32Array.from(history.slice(-this.window));
      this.handle.applyConfig(this.config);
    }
    this.nextLength = history.length + 1;
    return sampleToken(batchLogitIndex, this.handle);
  }

  /**
   * sample(), then the sampled token's log probability and the top alternatives at its position, kept for
   * takeLogprobs (constructed with logprobsTop only). Reads the same row, so it runs where sample() does.
   */
  async sampleWithLogprobs(
    sampleToken: NativeSampleToken,
    tokenLogits: NativeTokenLogits,
    batchLogitIndex: number,
    history: readonly Token[],
  ): Promise<number> {
    const token = await this.sample(sampleToken, batchLogitIndex, history);
    const lp = this.logprobs!;
    this.sampled =
      token < 0
        ? undefined
        : positionLogprobs(await tokenLogits(batchLogitIndex, lp.reader, [token], lp.top), token, lp.top);
    return token;
  }

  /** The log probabilities of the token sampleWithLogprobs returned last (once). */
  takeLogprobs(): PositionLogprobs | undefined {
    const s = this.sampled;
    this.sampled = undefined;
    return s;
  }

  dispose(): void {
    this.handle.dispose();
    this.logprobs?.reader.dispose();
  }
}
