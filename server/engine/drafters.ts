// The drafter of one generation (speculative decoding): the loaded model's draft model, else prompt lookup when the
// request asks for it (draft_ngram), each paced by the acceptance it gets (draft-pacer.ts); none otherwise.
import { MODEL_DRAFT_SIZE, ModelDrafter } from "./draft-model.ts";
import type { LoadedModel } from "./loaded-model.ts";
import { repeatWindow, type ResolvedSampling } from "./sampling.ts";
import { ngramDrafter, pacedDrafter, type Drafter } from "./speculation.ts";
import { penaltyConfig } from "./token-sampler.ts";

export async function openDrafter(
  loaded: LoadedModel,
  sampling: ResolvedSampling,
  signal: AbortSignal,
): Promise<Drafter | undefined> {
  const draft = loaded.draft;
  if (draft) {
    const window = repeatWindow(sampling, loaded.contextLength);
    const drafter = await ModelDrafter.open(
      draft,
      { size: MODEL_DRAFT_SIZE, penalties: penaltyConfig(sampling, window), window, target: loaded.slots },
      signal,
    );
    // A drafted token costs one decode of the draft model: about its size's share of a target step (memory-bound).
    return pacedDrafter(drafter, {
      max: MODEL_DRAFT_SIZE,
      min: sampling.draftMin,
      draftPerToken: draft.model.size / loaded.model.size,
    });
  }
  if (sampling.draftNgram > 0)
    return pacedDrafter(ngramDrafter(sampling.draftNgram), {
      max: sampling.draftNgram,
      min: sampling.draftMin,
      draftPerToken: 0,
    });
  return undefined;
}
