// Speculative decoding: a generating sequence queues its next token with a few tokens drafted after it, the model
// decodes them in one call (SlotLoop.evaluateDraft), and the sequence's own sampler verifies the draft row by row.
// Each row is sampled exactly as it would have been without the draft (same sampler, same history, same order), so the
// output is the same; a draft only saves decode calls when its tokens are the ones sampled. Drafters: prompt lookup
// (ngram-draft.ts), which needs no second model, and a draft model (draft-model.ts); each paced by its acceptance
// (draft-pacer.ts).
import type { Token } from "node-llama-cpp";
import { DraftPacer, type PacerOptions } from "./draft-pacer.ts";
import { ngramDraft } from "./ngram-draft.ts";

/**
 * Proposes the tokens after `history` (prompt and output so far), at most `max`; none = decode the token alone. A draft
 * model drafts asynchronously (draft-model.ts); `dispose` ends a generation's use of it.
 */
export interface Drafter {
  draft(history: readonly Token[], max: number): Token[] | Promise<Token[]>;
  /** A draft of `drafted` tokens was verified and `accepted` of them kept. */
  verified?(drafted: number, accepted: number): void;
  dispose?(): void;
}

/**
 * `inner`, drafting as many tokens a step as pay at the acceptance seen so far (draft-pacer.ts): fewer, none while
 * drafts are mostly rejected (with small probes now and then) or cannot pay, from `min` up to `max`.
 */
export function pacedDrafter(inner: Drafter, o: PacerOptions): Drafter & { pacer: DraftPacer } {
  const pacer = new DraftPacer(o);
  const drafted = (tokens: Token[]): Token[] => {
    if (tokens.length === 0) pacer.skipped();
    return tokens;
  };
  return {
    pacer,
    draft(history, limit) {
      const size = Math.min(pacer.size(), limit);
      if (size <= 0) return drafted([]);
      const tokens = inner.draft(history, size);
      return Array.isArray(tokens) ? drafted(tokens) : tokens.then(drafted);
    },
    verified: (n, accepted) => pacer.verified(n, accepted),
    ...(inner.dispose ? { dispose: () => inner.dispose!() } : {}),
  };
}

/** Tokens a prompt-lookup draft holds at most, by default (llama.cpp's --draft-max is 16; a CPU step grows with it). */
export const DEFAULT_NGRAM_DRAFT = 8;

/** Prompt lookup (llama.cpp's ngram drafting): at most `size` tokens a step. */
export const ngramDrafter = (size: number): Drafter => ({
  draft: (history, max) => ngramDraft(history, Math.min(size, max)) as Token[],
});

/**
 * Verifies `drafted` from the decode's logit `rows` (the row of the token before the draft, then one per drafted
 * token):
 * samples row after row with `sample`, which reads `history` (the sequence so far, for repeat penalties), while the
 * token sampled is the drafted one. Returns the tokens sampled: the accepted drafted tokens, then the first that
 * differs, or the one after them all. `history` is as it was when this returns.
 */
export async function verifyDraft(
  rows: Uint32Array,
  drafted: readonly Token[],
  history: Token[],
  sample: (row: number) => Promise<number>,
): Promise<Token[]> {
  const out: Token[] = [];
  const length = history.length;
  try {
    for (let i = 0; i < rows.length; i++) {
      const token = await sample(rows[i]!);
      if (token < 0) throw new Error("failed to sample the next token");
      out.push(token as Token);
      if (i >= drafted.length || token !== drafted[i]) break;
      // The next row follows the accepted token: the sampler sees the history it would have seen without the draft.
      history.push(token as Token);
    }
  } finally {
    history.length = length;
  }
  return out;
}
