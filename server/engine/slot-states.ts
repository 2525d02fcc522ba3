// What the slot loop does to its slots' KV states between decode steps (slot-loop.ts runs these, never under a
// decode): cut a history to a prompt's prefix, save one to the RAM prompt cache before it is overwritten, restore a
// saved one, and move a busy slot's state into a free slot's place without losing what the free one held. Through the
// native port; the sequence state calls (saveSequence, restoreSequence) exist on the patched addon only.
import type { Token } from "node-llama-cpp";
import type { NativeContext } from "./native/port.ts";
import { commonPrefixLength, MIN_CACHED_TOKENS, type ModelPromptCache } from "./prompt-cache.ts";
import type { SlotMove } from "./slot-pool.ts";

/** One sequence's KV cache: the tokens it holds, in position order. */
export class Slot {
  /** The llama.cpp sequence id; two slots trade ids when one moves into the other's place (SlotLoop.relocate). */
  id: number;
  readonly tokens: Token[] = [];

  constructor(id: number) {
    this.id = id;
  }
}

/** How a slot was readied for a prompt (SlotLoop.reuse). */
export interface Reuse {
  /** Tokens of the prompt restored from the RAM prompt cache (0: none). */
  restored: number;
  /** The cache was asked: it holds more of the prompt than the slot did (hit) or not (miss). */
  looked: boolean;
  /** The runtime refused the saved state: the slot started empty and the entry is gone. */
  failed: boolean;
}

/** Whether the runtime can copy a sequence's state to host memory and back. */
export const movesStates = (native: NativeContext): boolean =>
  native.saveSequence !== undefined && native.restoreSequence !== undefined;

export class SlotStates {
  private readonly native: NativeContext;
  private readonly cache: ModelPromptCache | undefined;

  constructor(native: NativeContext, cache: ModelPromptCache | undefined) {
    this.native = native;
    // Without the runtime's state calls there is nothing to save or restore.
    this.cache = movesStates(native) ? cache : undefined;
  }

  /** Tokens of `prompt` the RAM prompt cache could restore into any slot (0 without a cache). */
  restorable(prompt: readonly Token[]): number {
    return this.cache?.match(prompt).length ?? 0;
  }

  /** SlotLoop.reuse, between steps. */
  reuse(slot: Slot, prompt: readonly Token[], keepOf: (held: readonly Token[]) => number): Reuse {
    const out: Reuse = { restored: 0, looked: false, failed: false };
    const cache = this.cache;
    const own = commonPrefixLength(slot.tokens, prompt);
    if (cache && prompt.length - own > MIN_CACHED_TOKENS) {
      out.looked = true;
      const { entry, length } = cache.match(prompt);
      if (entry && length - own > MIN_CACHED_TOKENS) {
        this.save(slot, own);
        if (this.native.restoreSequence!(slot.id, entry.state)) {
          slot.tokens.length = 0;
          slot.tokens.push(...entry.tokens);
          cache.touch(entry);
        } else {
          slot.tokens.length = 0;
          cache.delete(entry);
          out.failed = true;
        }
      }
    }
    const before = commonPrefixLength(slot.tokens, prompt);
    this.cut(slot, keepOf(slot.tokens));
    if (out.looked && !out.failed && before > own) out.restored = Math.min(before, slot.tokens.length);
    return out;
  }

  /** Drops what the slot holds from `keep` on; what goes is saved to the RAM prompt cache first where worth it. */
  cut(slot: Slot, keep: number): void {
    if (keep >= slot.tokens.length) return;
    this.save(slot, keep);
    if (keep <= 0 || !this.native.removeTokens(slot.id, keep, slot.tokens.length)) {
      this.native.disposeSequence(slot.id);
      slot.tokens.length = 0;
    } else slot.tokens.length = keep;
  }

  /** `to`'s sequence becomes a copy of `from`'s: through host memory where the runtime can (at once), else copy. */
  async copyInto(to: Slot, from: Slot): Promise<void> {
    try {
      if (movesStates(this.native)) {
        if (!this.native.restoreSequence!(to.id, this.native.saveSequence!(from.id)))
          throw new Error("the runtime refused a sequence's own state");
      } else await this.native.copySequence(to.id, from.id);
    } catch (err) {
      // What `to` holds is unknown now.
      this.native.disposeSequence(to.id);
      to.tokens.length = 0;
      throw err;
    }
    to.tokens.length = 0;
    to.tokens.push(...from.tokens);
  }

  /**
   * SlotLoop.relocate, between steps: `busy`'s state goes into `free`'s place and the two trade ids; what `free` held
   * is kept (swapped, or first copied into `spare`).
   */
  async move({ busy, free, spare, swap }: SlotMove<Slot>): Promise<void> {
    if (swap) return this.swap(busy, free);
    // Without a spare, `free` is the one overwritten (it holds nothing).
    const target = spare ?? free;
    if (spare) {
      await this.copyInto(spare, free);
      // `free` keeps its history under the spare's old id; the spare takes the place to overwrite.
      [free.id, spare.id] = [spare.id, free.id];
    }
    await this.copyInto(target, busy);
    [busy.id, target.id] = [target.id, busy.id];
  }

  /** `busy` and `free` trade states and ids: each keeps its own tokens. A refused state empties the free slot. */
  swap(busy: Slot, free: Slot): void {
    const busyState = this.native.saveSequence!(busy.id),
      freeState = this.native.saveSequence!(free.id);
    const refused = () => {
      free.tokens.length = 0;
      return new Error("the runtime refused a sequence's own state");
    };
    // A refused restore leaves the target sequence empty: the busy one is still whole where it was.
    if (!this.native.restoreSequence!(free.id, busyState)) throw refused();
    [busy.id, free.id] = [free.id, busy.id];
    if (!this.native.restoreSequence!(free.id, freeState)) throw refused();
  }

  /** Saves the slot's history to the RAM prompt cache when at least MIN_CACHED_TOKENS of it beyond `keep` would go. */
  private save(slot: Slot, keep: number): void {
    const cache = this.cache;
    if (!cache || slot.tokens.length - keep < MIN_CACHED_TOKENS || !cache.wants(slot.tokens)) return;
    cache.add(slot.tokens, this.native.saveSequence!(slot.id));
  }
}
