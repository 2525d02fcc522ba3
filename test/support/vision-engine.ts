// The engine's parts with a projector, for native-level image tests: a LoadedModel (one context, its step batcher and
// slots, all held by the test) and a Projector, and greedy generation the way the scheduler will evaluate a prompt
// with images: text chunks as ordinary prompt tokens through the step batcher, image chunks encoded on a worker and
// their embeddings decoded into the sequence's KV cells between steps.
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { silentLogger } from "../../server/common/logger.ts";
import { llamaRuntime } from "../../server/engine/llama-runtime.ts";
import { LoadedModel } from "../../server/engine/loaded-model.ts";
import { noMetrics } from "../../server/engine/metrics.ts";
import { loadProjector, type Projector, type TokenizedPrompt } from "../../server/engine/native/mtmd.ts";
import { testEngineBuild } from "./engine-build.ts";
import { TokenSampler } from "../../server/engine/token-sampler.ts";
import { resolveSampling } from "../../server/engine/sampling.ts";
import type { Slot } from "../../server/engine/slot-loop.ts";
import type { VisionPair } from "./gguf/vision.ts";

export const GREEDY = resolveSampling({}, { temperature: 0, top_k: 1, repeat_last_n: 0 });

/** What a slot holds at an image's positions: no token (the scheduler will key them by the image's id). */
export const IMAGE_CELL = -1 as Token;

export interface VisionEngine {
  loaded: LoadedModel;
  projector: Projector;
  /** Every sequence of the context, held by the test (ids 0, 1, …). */
  slots: Slot[];
  close(): Promise<void>;
}

export async function openVisionEngine(pair: VisionPair, o: { parallel: number }): Promise<VisionEngine> {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const loaded = await LoadedModel.load({
    llama,
    spec: {
      name: "tiny-vision",
      digest: "sha256:tiny-vision",
      modelPath: pair.model,
      projector: pair.mmproj,
      parameters: {},
      messages: [],
      adapters: [],
      size: 1,
    },
    requestedContextLength: 512,
    mappedWeights: true,
    parallel: o.parallel,
    maxQueue: o.parallel,
    threads: 2,
    metrics: noMetrics,
    moveSlots: false,
  });
  const projector = await loadProjector(loaded.model, pair.mmproj, { threads: 2 });
  const slots: Slot[] = [];
  for (let i = 0; i < o.parallel; i++) slots.push(await loaded.slots.acquire(undefined));
  return {
    loaded,
    projector,
    slots,
    async close() {
      await projector.dispose();
      for (const s of slots) loaded.slots.release(s, () => undefined);
      await loaded.dispose();
    },
  };
}

/**
 * Evaluates the prompt's chunks from `from` on into the slot after what it holds, then generates up to `n` tokens
 * greedily; returns them.
 */
export async function generate(
  engine: VisionEngine,
  slot: Slot,
  prompt: TokenizedPrompt,
  n: number,
  from = 0,
): Promise<Token[]> {
  const { loaded, projector } = engine;
  const sampler = new TokenSampler(loaded.slots.native, GREEDY, 1, 0, undefined);
  const history: Token[] = [];
  const sample = (i: number) => sampler.sample(loaded.slots.sampleToken, i, history);
  try {
    let next: Token | undefined;
    for (const [i, chunk] of prompt.chunks.entries()) {
      if (i < from) continue;
      if (chunk.type === "text") {
        next = await loaded.slots.evaluate(slot, chunk.tokens, sample);
        history.push(...chunk.tokens);
        continue;
      }
      const media = await projector.encode(prompt, i);
      try {
        const position = await projector.decodeMedia(loaded.context, media, slot.id, slot.tokens.length);
        assert.equal(position, slot.tokens.length + media.nPos);
        slot.tokens.push(...new Array<Token>(media.nPos).fill(IMAGE_CELL));
      } finally {
        await media.dispose();
      }
    }
    return await continueGreedy(engine, slot, next, n, sampler, history);
  } finally {
    sampler.dispose();
  }
}

/** Evaluates `tokens` after what the slot holds and generates up to `n` tokens greedily (no images). */
export async function generateFromText(engine: VisionEngine, slot: Slot, tokens: Token[], n: number): Promise<Token[]> {
  const { loaded } = engine;
  const sampler = new TokenSampler(loaded.slots.native, GREEDY, 1, 0, undefined);
  const history: Token[] = [];
  try {
    const first = await loaded.slots.evaluate(slot, tokens, (i) =>
      sampler.sample(loaded.slots.sampleToken, i, history),
    );
    return await continueGreedy(engine, slot, first, n, sampler, history);
  } finally {
    sampler.dispose();
  }
}

/** Generation from a sampled first token: each token decoded in turn until `n`, or end of generation. */
export async function continueGreedy(
  engine: VisionEngine,
  slot: Slot,
  first: Token | undefined,
  n: number,
  sampler: TokenSampler,
  history: Token[],
): Promise<Token[]> {
  const { loaded } = engine;
  const out: Token[] = [];
  let next = first;
  while (next !== undefined && out.length < n && !loaded.model.isEogToken(next)) {
    out.push(next);
    history.push(next);
    if (out.length === n) break;
    next = await loaded.slots.evaluate(slot, [next], (i) => sampler.sample(loaded.slots.sampleToken, i, history));
  }
  return out;
}
