// A draft model for speculative decoding (Modelfile `PARAMETER draft_model <ref>`): a smaller model with the target's
// vocabulary, loaded beside it with a context of its own (as many sequences as the target's) and its own slot loop.
// Each generation holds one of its sequences and drafts greedily under the stream's own repeat penalties (the target's
// greedy choice, penalties included, is what it guesses): it catches the draft sequence up with the stream's tokens
// (keeping the prefix it already holds) and decodes a few tokens ahead, which the target then verifies
// (speculation.ts).
import type { Llama, LlamaContext, LlamaModel, Token } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import { keepCommonPrefix } from "./prefix-reuse.ts";
import { nativeContextOf } from "./native/node-llama-cpp.ts";
import type { NativeSampler, SamplerConfig } from "./native/port.ts";
import { SlotLoop, type Slot } from "./slot-loop.ts";
import type { Drafter } from "./speculation.ts";
import type { ModelSpec } from "./types.ts";

/** Tokens a draft model drafts a step at most (each costs one of its decodes; the pacer may pick fewer). */
export const MODEL_DRAFT_SIZE = 6;

export interface DraftModel {
  name: string;
  model: LlamaModel;
  context: LlamaContext;
  slots: SlotLoop;
}

const vocabularyOf = (model: LlamaModel): readonly string[] =>
  (model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly string[] } } }).tokenizer?.ggml?.tokens ?? [];

/**
 * Where two vocabularies differ, in words (undefined: the same tokens in the same order). A draft must share the
 * target's vocabulary: its token ids are verified as the target's.
 */
export function vocabularyDifference(target: readonly string[], draft: readonly string[]): string | undefined {
  if (target.length !== draft.length) return `${draft.length} tokens, not ${target.length}`;
  const i = target.findIndex((t, id) => draft[id] !== t);
  return i < 0 ? undefined : `token ${i} is ${JSON.stringify(draft[i])}, not ${JSON.stringify(target[i])}`;
}

export async function loadDraftModel(o: {
  llama: Llama;
  spec: ModelSpec;
  draft: NonNullable<ModelSpec["draft"]>;
  target: LlamaModel;
  contextLength: number;
  parallel: number;
  threads: number;
  mappedWeights: boolean;
}): Promise<DraftModel> {
  const model = await o.llama.loadModel({ modelPath: o.draft.modelPath, useMmap: o.mappedWeights });
  try {
    const differs = vocabularyDifference(vocabularyOf(o.target), vocabularyOf(model));
    if (differs !== undefined)
      throw new AppError(
        "BAD_REQUEST",
        `draft model "${o.draft.name}" does not share the vocabulary of "${o.spec.name}" (${differs}): ` +
          "a draft model must have the same tokenizer",
        { param: "draft_model" },
      );
    const context = await model.createContext({
      contextSize: o.contextLength,
      sequences: o.parallel,
      threads: o.threads,
      flashAttention: "auto",
      failedCreationRemedy: false,
    });
    const slots = new SlotLoop(nativeContextOf(context, model), { parallel: o.parallel, maxQueue: 0 });
    return { name: o.draft.name, model, context, slots };
  } catch (e) {
    await model.dispose();
    throw e;
  }
}

export interface DrafterOptions {
  /** Tokens drafted a step at most. */
  size: number;
  /** The stream's penalties (penaltyConfig) over `window` tokens. */
  penalties: SamplerConfig;
  window: number;
  /** The target's slot loop: its threads pause while the draft model decodes, and the draft's while it verifies. */
  target: SlotLoop;
}

/** One generation's drafter on a draft model: holds a draft sequence until disposed. */
export class ModelDrafter implements Drafter {
  private readonly model: DraftModel;
  private readonly size: number;
  private readonly sampler: NativeSampler;
  /** The stream's penalties ({} = none) and their window: a draft without them guesses a different greedy token. */
  private readonly penalties: { config: SamplerConfig; window: number };
  private readonly target: SlotLoop;
  private slot: Slot | undefined;

  private constructor(draft: DraftModel, o: DrafterOptions, slot: Slot) {
    this.model = draft;
    this.size = o.size;
    this.slot = slot;
    this.penalties = { config: o.penalties, window: o.window };
    this.target = o.target;
    // Without a temperature the chain is greedy (after the penalties).
    this.sampler = draft.slots.native.createSampler();
    this.sampler.applyConfig(o.penalties);
  }

  /** A drafter on a draft sequence (as many as the target has: one is free for each generation). */
  static async open(draft: DraftModel, o: DrafterOptions, signal: AbortSignal): Promise<ModelDrafter> {
    return new ModelDrafter(draft, o, await draft.slots.acquire(signal));
  }

  async draft(history: readonly Token[], max: number): Promise<Token[]> {
    const n = Math.min(this.size, max);
    const slot = this.slot;
    // After a context shift the stream's history is longer than a context: no drafts then.
    if (n <= 0 || slot === undefined || history.length === 0 || history.length + n >= this.model.context.contextSize)
      return [];
    const loop = this.model.slots;
    const sample = (row: number) => loop.sampleToken(row, this.sampler);
    const out: Token[] = [];
    // Two threadpools polling on the same cores slow each other's decodes (self-drafting SmolLM2: 0.21 of the speed).
    this.target.pauseThreadpool();
    let next = await keepCommonPrefix(loop, slot, history);
    // The penalty window starts from the stream's history; the sampler adds each token it drafts.
    const { config, window } = this.penalties;
    if (config.repeatPenalty !== undefined)
      this.sampler.applyConfig({ ...config, repeatPenaltyTokens: Uint32Array.from(history.slice(-window)) });
    while (out.length < n) {
      const token = (await loop.evaluate(slot, next, sample)) as Token;
      if (this.model.model.isEogToken(token)) break;
      out.push(token);
      next = [token];
    }
    loop.pauseThreadpool();
    return out;
  }

  dispose(): void {
    const slot = this.slot;
    this.slot = undefined;
    this.sampler.dispose();
    if (slot) this.model.slots.release(slot, () => undefined);
  }
}
