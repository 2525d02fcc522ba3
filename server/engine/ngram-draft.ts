// Prompt-lookup drafting (llama.cpp's ngram speculative type, "prompt lookup decoding"): the tokens that followed the
// latest earlier occurrence of the sequence's last n tokens are a guess at what comes next; no second model. Output
// that quotes or repeats its prompt (code edits, summaries, lists) is drafted right most of the time. Pure.

/** Longest and shortest n-gram looked up, longest first (a longer match predicts better). */
export const NGRAM_MAX = 4;
export const NGRAM_MIN = 2;

/**
 * Up to `max` tokens drafted from `history` (prompt and output so far): what followed the latest earlier occurrence of
 * its last n tokens, for n from NGRAM_MAX down to NGRAM_MIN; none when no n-gram recurs.
 */
export function ngramDraft(history: readonly number[], max: number): number[] {
  const len = history.length;
  if (max <= 0) return [];
  for (let n = Math.min(NGRAM_MAX, len - 1); n >= NGRAM_MIN; n--) {
    // The match must end before the last n tokens end, so at least one token follows it.
    for (let end = len - 2; end >= n - 1; end--) {
      let k = 0;
      while (k < n && history[end - k] === history[len - 1 - k]) k++;
      if (k === n) return history.slice(end + 1, Math.min(len, end + 1 + max));
    }
  }
  return [];
}
