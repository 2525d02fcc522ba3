// The native port (port.ts) on node-llama-cpp's addon: the one file that reads node-llama-cpp's private fields (the
// addon context in LlamaContext._ctx, the addon's exports in Llama._bindings, the native model in LlamaModel._model,
// a grammar's native state in LlamaGrammarEvaluationState._state) and the methods and settings only Gantry's patched
// addon has (node-llama-cpp-addon.patch). These are the calls node-llama-cpp's own JS layer makes, without its
// sequence objects and batch dispatcher: the slot loop (../slot-loop.ts) schedules the decode steps itself.
import type {
  Llama,
  LlamaContext,
  LlamaGrammarEvaluationState,
  LlamaModel,
  LlamaRankingContext,
  Token,
} from "node-llama-cpp";
import type { NativeContext, NativeSampler, RowLogits, SamplerConfig } from "./port.ts";

/** node-llama-cpp's internal AddonSampler. */
interface AddonSampler {
  applyConfig(config: Record<string, unknown>): void;
  dispose(): void;
}

/**
 * probabilities (false), confidence (false), logits: [token ids to report, include max, include min, include selected,
 * top n], total logit weight (true): what node-llama-cpp's own evaluate passes for `logits` and `totalLogitWeight`.
 */
type AddonLogitsArgs = [false, false, [number[], boolean, boolean, boolean, number], true];

/** [token, probabilities, confidence, flat (token id, logit) pairs, sum of exp(logit - max logit) over the row]. */
type AddonSampleResult = [number, unknown, unknown, number[] | undefined, number | undefined];

/** node-llama-cpp's internal AddonContext: the calls used here. */
export interface AddonContext {
  initBatch(size: number): void;
  addToBatch(
    sequenceId: number,
    firstTokenSequenceIndex: number,
    tokens: Uint32Array,
    logitIndexes: Uint32Array,
  ): Uint32Array;
  decodeBatch(): Promise<void>;
  init(): Promise<boolean>;
  dispose(): Promise<void>;
  sampleToken(
    batchLogitIndex: number,
    sampler: AddonSampler,
    ...logits: [] | AddonLogitsArgs
  ): Promise<number | AddonSampleResult>;
  disposeSequence(sequenceId: number): void;
  copySequenceStateFromOtherSequence(targetSequenceId: number, sourceSequenceId: number): Promise<number>;
  removeTokenCellsFromSequence(sequenceId: number, start: number, end: number): boolean;
  shiftSequenceTokenCells(sequenceId: number, start: number, end: number, delta: number): void;
  /** Patched addon only. */
  decodeBatchInline?(): void;
  /** Writes row i's token to tokens[i]; returns undefined, or each row's failure message when one failed. */
  sampleTokens?(
    batchLogitIndexes: Uint32Array,
    samplers: AddonSampler[],
    tokens: Int32Array,
  ): Array<string | undefined> | undefined;
  getThreadpoolThreads?(): number;
}

interface ModelInternals {
  _llama: {
    _bindings: {
      AddonSampler: (new (model: unknown) => AddonSampler) & {
        acceptGrammarEvaluationStateToken(state: unknown, token: number): void;
      };
      /** Patched addon: a sequence's state in host memory (node-llama-cpp-addon.patch, item 8). */
      getSequenceState?(context: AddonContext, sequenceId: number): Uint8Array;
      setSequenceState?(context: AddonContext, sequenceId: number, state: Uint8Array): number;
      /** Patched addon: a sequence's pooled output of the last decode (node-llama-cpp-addon.patch, item 9). */
      getSequenceEmbedding?(context: AddonContext, sequenceId: number): Float64Array;
      AddonContext: new (model: unknown, options: Record<string, unknown>) => AddonContext;
      /** Patched addon with image input (node-llama-cpp-addon.patch, item 6). */
      AddonMtmdContext?: { pauseThreadpool?(context: AddonContext): boolean };
    };
  };
  _model: unknown;
}

/** The addon's own context object (what native calls such as mtmd's decodeMedia take). */
export const addonContextOf = (context: LlamaContext): AddonContext =>
  (context as unknown as { _ctx: AddonContext })._ctx;

const grammarStateOf = (grammar: LlamaGrammarEvaluationState): unknown =>
  (grammar as unknown as { _state?: unknown })._state;

class AddonNativeSampler implements NativeSampler {
  readonly addon: AddonSampler;

  constructor(model: LlamaModel) {
    const internal = model as unknown as ModelInternals;
    this.addon = new internal._llama._bindings.AddonSampler(internal._model);
  }

  applyConfig(config: SamplerConfig): void {
    const { grammar, ...rest } = config;
    this.addon.applyConfig(grammar ? { ...rest, grammarEvaluationState: grammarStateOf(grammar) } : rest);
  }

  dispose(): void {
    this.addon.dispose();
  }
}

const addonOf = (sampler: NativeSampler): AddonSampler => (sampler as AddonNativeSampler).addon;

/**
 * Advances a grammar's state over tokens written before it applied (the text after a tool call's marker, written in the
 * same token as the marker): what the sampler does with each token it samples under the grammar. Throws when the
 * grammar does not allow them.
 */
export function acceptGrammarTokens(model: LlamaModel, state: LlamaGrammarEvaluationState, tokens: number[]): void {
  const sampler = (model as unknown as ModelInternals)._llama._bindings.AddonSampler;
  for (const token of tokens) sampler.acceptGrammarEvaluationStateToken(grammarStateOf(state), token);
}

/** The native port of a node-llama-cpp context (of `model`). */
export function nativeContextOf(context: LlamaContext, model: LlamaModel): NativeContext {
  const addon = addonContextOf(context);
  const inline = typeof addon.decodeBatchInline === "function" ? addon.decodeBatchInline.bind(addon) : undefined;
  const mtmd = (model as unknown as ModelInternals)._llama._bindings.AddonMtmdContext;
  const pause = typeof mtmd?.pauseThreadpool === "function" ? () => mtmd.pauseThreadpool!(addon) : undefined;
  const states = sequenceStatesOf(model, addon);
  const batched = batchSamplingOf(addon);
  return {
    batchSize: context.batchSize,
    threadpoolThreads: typeof addon.getThreadpoolThreads === "function" ? addon.getThreadpoolThreads() : 0,
    // The patched addon samples plain tokens on the calling thread; decodeBatchInline is its mark.
    inlineSampling: inline !== undefined,
    initBatch: (size) => addon.initBatch(size),
    addToBatch: (sequenceId, first, tokens, logitIndexes) => addon.addToBatch(sequenceId, first, tokens, logitIndexes),
    decodeBatch: () => addon.decodeBatch(),
    ...(inline ? { decodeBatchInline: inline } : {}),
    ...(pause ? { pauseThreadpool: pause } : {}),
    ...states,
    ...batched,
    sampleToken: (batchLogitIndex, sampler) => addon.sampleToken(batchLogitIndex, addonOf(sampler)) as Promise<number>,
    async tokenLogits(batchLogitIndex, sampler, tokens, top): Promise<RowLogits> {
      const [, , , pairs, weight] = (await addon.sampleToken(
        batchLogitIndex,
        addonOf(sampler),
        false,
        false,
        [tokens, false, false, false, Math.max(1, top)],
        true,
      )) as AddonSampleResult;
      if (!pairs || pairs.length < 2 || weight === undefined) throw new Error("the engine returned no logits");
      // The top candidates come first, sorted by logit: the first one's is the row's maximum.
      return { pairs, logSumExp: pairs[1]! + Math.log(weight) };
    },
    createSampler: () => new AddonNativeSampler(model),
    disposeSequence: (sequenceId) => addon.disposeSequence(sequenceId),
    copySequence: async (target, source) => {
      await addon.copySequenceStateFromOtherSequence(target, source);
    },
    removeTokens: (sequenceId, start, end) => addon.removeTokenCellsFromSequence(sequenceId, start, end),
    shiftTokens: (sequenceId, start, end, delta) => addon.shiftSequenceTokenCells(sequenceId, start, end, delta),
  };
}

/** The patched addon's batched sampling (port.ts sampleTokens, the patch's item 10); none on the prebuilt addon. */
function batchSamplingOf(addon: AddonContext): Pick<NativeContext, "sampleTokens"> {
  if (typeof addon.sampleTokens !== "function") return {};
  return {
    sampleTokens(batchLogitIndexes, samplers) {
      const tokens = new Int32Array(batchLogitIndexes.length);
      const failures = addon.sampleTokens!(batchLogitIndexes, samplers.map(addonOf), tokens);
      return Array.from(tokens, (token, i) => {
        const failure = failures?.[i];
        return failure === undefined ? token : new Error(failure);
      });
    },
  };
}

/** The patched addon's sequence state calls (port.ts saveSequence, restoreSequence); none on the prebuilt addon. */
function sequenceStatesOf(
  model: LlamaModel,
  addon: AddonContext,
): Pick<NativeContext, "saveSequence" | "restoreSequence"> {
  const { getSequenceState: get, setSequenceState: set } = (model as unknown as ModelInternals)._llama._bindings;
  if (typeof get !== "function" || typeof set !== "function") return {};
  return {
    saveSequence: (sequenceId) => get(addon, sequenceId),
    restoreSequence: (sequenceId, state) => set(addon, sequenceId, state) > 0,
  };
}

/**
 * The patched addon's setting (GANTRY_THREADPOOL_POLL), through its setGantrySettings binding, process-wide: read when
 * a context is created, so set once the runtime is loaded, before the engine creates a context.
 */
export interface AddonSettings {
  /** ggml poll level of the threadpool's idle threads, 0-100. */
  threadpoolPoll: number;
}

type SetGantrySettings = (settings: Partial<AddonSettings>) => void;

/** Hands `s` to the addon of `llama`; false when the addon is not the patched one (the prebuilt binary has none). */
export function applyAddonSettings(llama: Llama, s: AddonSettings): boolean {
  const bindings = (llama as unknown as { _bindings: { setGantrySettings?: SetGantrySettings } })._bindings;
  if (typeof bindings.setGantrySettings !== "function") return false;
  bindings.setGantrySettings({ threadpoolPoll: Math.max(0, Math.min(100, Math.round(s.threadpoolPoll))) });
  return true;
}

/** LlamaRankingContext internals: how it lays a pair out (template, or BOS/EOS/SEP), whether the head soft-maxes. */
interface RankingInternals {
  _getEvaluationInput(query: Token[], document: Token[]): Token[];
  readonly _currentArchRankingAlreadyNormalized: boolean;
}

/** A (query, document) pair's tokens exactly as node-llama-cpp's LlamaRankingContext evaluates them. */
export function rankingInput(ctx: LlamaRankingContext, query: string, document: string): Token[] {
  const tokens = (text: string) => ctx.model.tokenize(text, false, "trimLeadingSpace");
  return (ctx as unknown as RankingInternals)._getEvaluationInput(tokens(query), tokens(document));
}

/** Scores pairs laid out by rankingInput, many per decode: one sequence each, read by the patched addon. */
export interface PairScorer {
  /** Tokens one decode holds (the context's cells and batch); a longer pair cannot be scored here. */
  readonly maxTokens: number;
  /** Pairs one decode holds (the context's sequences). */
  readonly maxPairs: number;
  /** Scores in [0, 1], one per pair; the pairs must fit one decode. One call at a time. */
  score(pairs: readonly Token[][]): Promise<number[]>;
  dispose(): Promise<void>;
}

/**
 * A rank-pooling context on the patched addon with `pairs` sequences over one shared (unified) KV cache of `tokens`
 * cells, so pairs of any lengths that add up to `tokens` share a decode; undefined on an addon without
 * getSequenceEmbedding (the prebuilt one).
 */
export async function createPairScorer(
  ranking: LlamaRankingContext,
  opts: { tokens: number; pairs: number; threads: number },
): Promise<PairScorer | undefined> {
  const internals = ranking.model as unknown as ModelInternals;
  const { getSequenceEmbedding, AddonContext: Context } = internals._llama._bindings;
  if (typeof getSequenceEmbedding !== "function") return undefined;
  const addon = new Context(internals._model, {
    contextSize: opts.tokens,
    batchSize: opts.tokens,
    sequences: opts.pairs,
    threads: opts.threads,
    embeddings: true,
    ranking: true,
    kvUnified: true,
  });
  if (!(await addon.init())) throw new Error("failed to create the batched ranking context");
  // As LlamaRankingContext.rank: the head's first output, through a sigmoid unless the architecture soft-maxes it.
  const normalized = (ranking as unknown as RankingInternals)._currentArchRankingAlreadyNormalized;
  const probability = (x: number) => (normalized ? x : 1 / (1 + Math.exp(-x)));
  return {
    maxTokens: opts.tokens,
    maxPairs: opts.pairs,
    async score(pairs) {
      addon.initBatch(pairs.reduce((n, p) => n + p.length, 0));
      pairs.forEach((p, i) => addon.addToBatch(i, 0, Uint32Array.from(p), Uint32Array.of(p.length - 1)));
      try {
        await addon.decodeBatch();
        return pairs.map((_, i) => probability(getSequenceEmbedding(addon, i)[0] ?? 0));
      } finally {
        for (let i = 0; i < pairs.length; i++) addon.disposeSequence(i);
      }
    },
    dispose: () => addon.dispose(),
  };
}
