// Maps Ollama runtime options onto node-llama-cpp's evaluate options. Pure: request options override the model's
// PARAMETER defaults, which override Ollama's documented defaults.
import type { SamplingOptions } from "./types.ts";

export const OLLAMA_DEFAULTS = {
  temperature: 0.8,
  top_p: 0.9,
  top_k: 40,
  min_p: 0,
  repeat_penalty: 1.1,
  repeat_last_n: 64,
  presence_penalty: 0,
  frequency_penalty: 0,
  num_keep: 4,
} as const;

export interface ResolvedSampling {
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  seed: number | undefined;
  /** undefined = until the context is full. */
  maxTokens: number | undefined;
  stop: string[];
  repeatPenalty: number;
  /** How many recent tokens the repeat penalties look at (0 = penalties off). */
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** Prompt tokens (after the BOS) that truncation and context shifts keep. */
  numKeep: number;
  /** Requested context length per sequence, if any. */
  numCtx: number | undefined;
  /** Requested weights mapping (use_mmap), if any. */
  useMmap: boolean | undefined;
  /** Speculative decoding by prompt lookup: tokens drafted a step at most (0 = off). */
  draftNgram: number;
  /** Speculative decoding: tokens drafted a step at least, paying or not (0 = as many as pay: draft-pacer.ts). */
  draftMin: number;
}

/**
 * Merges options (request over model defaults) and fills Ollama's defaults. `contextLength` resolves repeat_last_n =
 * -1.
 */
export function resolveSampling(modelParams: SamplingOptions, request: SamplingOptions): ResolvedSampling {
  const o: SamplingOptions = { ...dropUndefined(modelParams), ...dropUndefined(request) };
  const numPredict = o.num_predict;
  return {
    temperature: o.temperature ?? OLLAMA_DEFAULTS.temperature,
    topP: o.top_p ?? OLLAMA_DEFAULTS.top_p,
    topK: o.top_k ?? OLLAMA_DEFAULTS.top_k,
    minP: o.min_p ?? OLLAMA_DEFAULTS.min_p,
    seed: seed32(o.seed),
    maxTokens: numPredict === undefined || numPredict < 0 ? undefined : numPredict,
    stop: (o.stop ?? []).filter((s) => s.length > 0),
    repeatPenalty: o.repeat_penalty ?? OLLAMA_DEFAULTS.repeat_penalty,
    repeatLastN: o.repeat_last_n ?? OLLAMA_DEFAULTS.repeat_last_n,
    presencePenalty: o.presence_penalty ?? OLLAMA_DEFAULTS.presence_penalty,
    frequencyPenalty: o.frequency_penalty ?? OLLAMA_DEFAULTS.frequency_penalty,
    numKeep: o.num_keep ?? OLLAMA_DEFAULTS.num_keep,
    numCtx: o.num_ctx !== undefined && o.num_ctx > 0 ? o.num_ctx : undefined,
    useMmap: o.use_mmap,
    draftNgram: o.draft_ngram ?? 0,
    draftMin: o.draft_min ?? 0,
  };
}

/**
 * The seed llama.cpp samples with: the low 32 bits of any integer a client sends (Ollama takes an int64; llama.cpp's
 * seed is a uint32). -1 (all ones, LLAMA_DEFAULT_SEED) and no seed draw a random one per request.
 */
export function seed32(seed: number | undefined): number | undefined {
  if (seed === undefined || !Number.isInteger(seed)) return undefined;
  const low = Number(BigInt.asUintN(32, BigInt(seed)));
  return low === 0xffffffff ? undefined : low;
}

/** The repeat-penalty window in tokens: Ollama's -1 means the whole context. */
export const repeatWindow = (s: ResolvedSampling, contextLength: number): number =>
  s.repeatLastN < 0 ? contextLength : s.repeatLastN;

/** True when no repeat penalty applies, so the sampler can skip the work. */
export const penaltiesOff = (s: ResolvedSampling): boolean =>
  s.repeatLastN === 0 || (s.repeatPenalty === 1 && s.presencePenalty === 0 && s.frequencyPenalty === 0);

function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
