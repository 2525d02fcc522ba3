// A sequence's token sampler on a native sampler chain (native/port.ts), configured from Ollama's options. The
// config is applied once per request: the native sampleToken takes every token it samples into the repeat-penalty
// window itself, so while the sequence grows by exactly those tokens there is nothing to update.
// With log probabilities asked for, a second native sampler with a greedy chain (which leaves the logits as they are)
// reads the sampled token's raw logit, the top alternatives and the row's log-sum-exp after each sampling call: the
// log-softmax of the raw logits, as Ollama (llama-server's n_probs) reports them. Requests without them never touch it.
import type { LlamaGrammarEvaluationState, Token } from "node-llama-cpp";
import type { NativeContext, NativeSampler, RowLogits, SamplerConfig } from "./native/port.ts";
import { penaltiesOff, type ResolvedSampling } from "./sampling.ts";

/** The native sampling call (SlotLoop.sampleToken): resolves with the token (-1 = none). */
export type NativeSampleToken = (batchLogitIndex: number, sampler: NativeSampler) => Promise<number>;

/** Reads logits of a decoded row through a sampler (SlotLoop.tokenLogits). */
export type NativeTokenLogits = (
  batchLogitIndex: number,
  sampler: NativeSampler,
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

/** The penalties of these options over a window of `window` tokens, without the window's tokens; none when off. */
export const penaltyConfig = (s: ResolvedSampling, window: number): SamplerConfig =>
  penaltiesOff(s)
    ? {}
    : {
        repeatPenalty: s.repeatPenalty,
        repeatPenaltyMaxTokens: window,
        repeatPenaltyPresencePenalty: s.presencePenalty,
        repeatPenaltyFrequencyPenalty: s.frequencyPenalty,
      };

/** The sampler chain's config for these options, without the penalty window's tokens (as llama-server builds it). */
export function samplerConfig(
  s: ResolvedSampling,
  seed: number,
  window: number,
  grammar: LlamaGrammarEvaluationState | undefined,
): SamplerConfig {
  return {
    temperature: s.temperature,
    minP: s.minP,
    topK: s.topK,
    topP: s.topP,
    seed,
    ...penaltyConfig(s, window),
    ...(grammar !== undefined ? { grammar } : {}),
  };
}

export class TokenSampler {
  private readonly handle: NativeSampler;
  /** The logit reader and how many alternatives to report, when log probabilities were asked for. */
  private readonly logprobs: { reader: NativeSampler; top: number } | undefined;
  private sampled: PositionLogprobs | undefined;
  private readonly config: SamplerConfig;
  private readonly penalties: boolean;
  private readonly window: number;
  /**
   * The history length the native sampler's state matches once the token it last sampled is appended (-1: none yet).
   */
  private nextLength = -1;

  constructor(
    native: NativeContext,
    sampling: ResolvedSampling,
    seed: number,
    window: number,
    grammar: LlamaGrammarEvaluationState | undefined,
    logprobsTop?: number,
  ) {
    this.handle = native.createSampler();
    if (logprobsTop !== undefined) {
      // No temperature in the config: a greedy chain, which leaves the candidates' logits raw.
      const reader = native.createSampler();
      reader.applyConfig({});
      this.logprobs = { reader, top: logprobsTop };
    }
    this.config = samplerConfig(sampling, seed, window, grammar);
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

  /** From the next sample on, tokens are sampled under `grammar` (a lazy grammar whose trigger was written). */
  useGrammar(grammar: LlamaGrammarEvaluationState): void {
    this.config.grammar = grammar;
    this.nextLength = -1;
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
