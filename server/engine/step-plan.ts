// What a decode step takes of the queued work: pure functions over the queue (one item per sequence that waits for a
// decode, its tokens not yet decoded). The slot loop (step-runner.ts) lays every plan out in sequence id order.

/** A sequence's queued work: the tokens it still has to decode (one for a generating sequence). */
export interface StepItem {
  tokens: readonly unknown[];
  /**
   * A generating sequence's token with its draft (speculative decoding): decoded in one call, beside the single tokens,
   * never cut (the draft's logit rows must come from one decode).
   */
  whole?: boolean;
}

/** A generating sequence's work: its next token, with or without a draft. */
export const generates = (item: StepItem): boolean => item.tokens.length === 1 || item.whole === true;

/** An item's share of a decode call. */
export interface Planned<T extends StepItem> {
  item: T;
  processAmount: number;
}

/**
 * Items in increasing sequence id order; items of unknown sequence last, in their order. With a KV cache per sequence,
 * llama.cpp splits a batch into one computation per run of consecutive, increasing sequence ids
 * (llama_batch_allocr::split_equal), so 8 single-token items in arrival order could take up to 8 graph computations
 * instead of one.
 */
export function bySequenceId<T>(items: readonly T[], idOf: (item: T) => number | undefined): T[] {
  const keyed = items.map((item, i) => ({ item, id: idOf(item) ?? Number.MAX_SAFE_INTEGER, i }));
  keyed.sort((a, b) => a.id - b.id || a.i - b.i);
  return keyed.map((k) => k.item);
}

/**
 * A step's share of the batch (`size` tokens) for each queued item: every single-token item (a generating sequence) its
 * token; then whole prompts, shortest first (ties in arrival order), while they fit; only when not even the shortest
 * prompt fits is it cut, to what is left. Items taking nothing wait for a later step and are left out of the plan.
 * A burst of prompts larger than the batch thus gets most of its first tokens after one step instead of all of them
 * after the whole burst (8 × 77 tokens in 512: six prompts finish in the first step), and a short prompt never waits
 * behind a long one. Cutting only when nothing fits whole keeps the step's shape even: llama.cpp computes a batch in
 * one pass per layer of equal per-sequence token counts (split_equal), so a part-prompt beside whole ones costs extra
 * passes. The longest wait is bounded by the sequence count: a prompt deferred now is the shortest once the others are
 * decoded.
 */
export function wholePromptsFirst<T extends StepItem>(items: readonly T[], size: number): Planned<T>[] {
  const amounts = new Map<T, number>();
  let left = size;
  for (const item of items) {
    if (generates(item) && item.tokens.length <= left) {
      amounts.set(item, item.tokens.length);
      left -= item.tokens.length;
    }
  }
  const prompts = items.filter((item) => !generates(item)).sort((a, b) => a.tokens.length - b.tokens.length);
  let tookPrompt = false;
  for (const item of prompts) {
    if (left <= 0 || (tookPrompt && item.tokens.length > left)) break;
    const amount = Math.min(item.tokens.length, left);
    amounts.set(item, amount);
    left -= amount;
    tookPrompt = true;
  }
  return items.filter((item) => amounts.has(item)).map((item) => ({ item, processAmount: amounts.get(item)! }));
}
