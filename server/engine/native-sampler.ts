// A sequence's token sampler on node-llama-cpp's native sampler (the AddonSampler its evaluate path creates),
// configured
// from Ollama's options. The config is applied once per request: the native sampleToken takes every token it samples
// into the repeat-penalty window itself, so while the sequence grows by exactly those tokens there is nothing to update
// (node-llama-cpp's own path re-applies the whole config per token, which the native side then finds unchanged).
import type { LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";
import { penaltiesOff, type ResolvedSampling } from "./sampling.ts";

/** node-llama-cpp's native sampler (internal AddonSampler). */
export interface NativeSamplerHandle {
  applyConfig(config: Record<string, unknown>): void;
  dispose(): void;
}

/** The native context's sampling call: resolves with the token (-1 = none). */
export type NativeSampleToken = (batchLogitIndex: number, sampler: NativeSamplerHandle) => Promise<number>;

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

export class NativeSampler {
  private readonly handle: NativeSamplerHandle;
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
  ) {
    // node-llama-cpp internals: the bindings of the model's Llama and the native model (what its LlamaSampler uses).
    const internal = model as unknown as {
      _llama: { _bindings: { AddonSampler: new (m: unknown) => NativeSamplerHandle } };
      _model: unknown;
    };
    this.handle = new internal._llama._bindings.AddonSampler(internal._model);
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

  dispose(): void {
    this.handle.dispose();
  }
}
