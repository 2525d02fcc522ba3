// A sequence's KV-cache prefix reuse: keep what the slot holds of a prompt, evaluate only the rest.
import type { Token } from "node-llama-cpp";
import type { Slot, SlotLoop } from "./slot-loop.ts";

export const commonPrefixLength = (a: readonly Token[], b: readonly Token[]): number => {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
};

/**
 * Keeps the part of the slot's KV cache that matches the prompt; returns the tokens still to evaluate (at least one).
 */
export async function reusePrefix(
  slots: SlotLoop,
  slot: Slot,
  prompt: Token[],
  keep: (n: number) => number = (n) => n,
): Promise<Token[]> {
  await slots.truncate(slot, (held) => keep(Math.min(commonPrefixLength(held, prompt), prompt.length - 1)));
  return prompt.slice(slot.tokens.length);
}
