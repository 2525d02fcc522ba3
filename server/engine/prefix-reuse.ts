// A draft sequence's prefix reuse (draft-model.ts): keep what the slot holds of the stream's tokens, evaluate the rest.
// The target's own reuse goes through the RAM prompt cache (generation.ts reusePrefix, SlotLoop.reuse).
import type { Token } from "node-llama-cpp";
import { commonPrefixLength } from "./prompt-cache.ts";
import type { Slot, SlotLoop } from "./slot-loop.ts";

/** Keeps the part of the slot's KV cache that matches `tokens`; returns the tokens still to evaluate (at least one). */
export async function keepCommonPrefix(slots: SlotLoop, slot: Slot, tokens: readonly Token[]): Promise<Token[]> {
  await slots.truncate(slot, (held) => Math.min(commonPrefixLength(held, tokens), tokens.length - 1));
  return tokens.slice(slot.tokens.length);
}
