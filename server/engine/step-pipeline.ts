// The step pipeline (docs/decisions/0022): where decodes run on a worker thread while the JS thread is free (a GPU
// runtime), the slot loop queues a generating slot's next decode with the token just sampled for it before its
// generation loop has that token (a continuation), and starts that step before handing the tokens over: the loops' JS
// work for a token (detokenizing, stop strings, parsing, streaming) then overlaps the next decode instead of the
// decode waiting for it. The loop takes its continuation by evaluating that same token (SlotLoop.evaluate) and gets the
// decode's result; the row is sampled only once it did, with the loop's sampler and history as they are then. A loop
// that ends without taking it (a stop string, an abort, an error) drops it: its token stays in the slot's KV cache if
// decoded (slot.tokens says so, and it is a valid continuation, so prefix reuse stays right) and nothing is sampled
// after it. Whether a token may continue is the generation loop's own rule (ContinueFn: not an end of generation, not
// past its token budget or context, no draft, not while its client holds text).
import type { Token } from "node-llama-cpp";
import type { StepPipelineSetting } from "../common/step-pipeline-settings.ts";

/**
 * Whether a model's steps are pipelined. With every layer on a GPU the decode computes there and the JS thread is free
 * meanwhile; where the CPU computes (all layers or some), every core does, and JS work overlapping a decode preempts a
 * compute thread (inline decode is faster there: docs/engine.md). Pure.
 */
export const pipelinesSteps = (setting: StepPipelineSetting, gpuLayers: number, totalLayers: number): boolean =>
  setting === "on" || (setting === "auto" && totalLayers > 0 && gpuLayers >= totalLayers);

/** Whether the token just sampled for a slot may be decoded before its generation loop has it. */
export type ContinueFn = (token: Token) => boolean;

/** A continuation its generation loop dropped: the result of its row, never sampled. */
export const DROPPED: unique symbol = Symbol("a continuation its generation loop dropped");

/** What a continuation's queue item is made of: the slot, its token, how its result settles, and when it is taken. */
export interface ContinuationParts<S> {
  slot: S;
  tokens: Token[];
  resolve(token: Token): void;
  reject(err: unknown): void;
  /** True once the generation loop takes the continuation, false when it dropped it. */
  taken: Promise<boolean>;
}

interface Open<Item> {
  token: Token;
  item: Item;
  result: Promise<Token>;
  take(taken: boolean): void;
}

/** The continuations their generation loops have not taken yet, one per slot at most. */
export class Continuations<Item> {
  private readonly open = new Map<object, Open<Item>>();
  /** Hears when a continuation's result settles (taken or not): the step fill's accounting. */
  private readonly onSettled: () => void;

  constructor(onSettled: () => void) {
    this.onSettled = onSettled;
  }

  has(slot: object): boolean {
    return this.open.has(slot);
  }

  /** A continuation of `slot` with `token`: the queue item `make` builds from its parts. */
  add<S extends object>(slot: S, token: Token, make: (parts: ContinuationParts<S>) => Item): Item {
    let take!: (taken: boolean) => void;
    const taken = new Promise<boolean>((resolve) => (take = resolve));
    let parts!: ContinuationParts<S>;
    const result = new Promise<Token>((resolve, reject) => {
      parts = { slot, tokens: [token], resolve, reject, taken };
    });
    // Settled once, whether its loop takes it or not (a dropped one's rejection is handled here).
    result.then(this.onSettled, this.onSettled);
    const item = make(parts);
    this.open.set(slot, { token, item, result, take });
    return item;
  }

  /**
   * The generation loop evaluates `tokens` on `slot`: when that is the continued token, `attach` gives the item the
   * loop's sampling, and the continuation's result is returned; undefined when the slot has no continuation.
   */
  take(slot: object, tokens: readonly Token[], attach: (item: Item) => void): Promise<Token> | undefined {
    const open = this.open.get(slot);
    if (!open) return undefined;
    this.open.delete(slot);
    if (tokens.length !== 1 || tokens[0] !== open.token) {
      open.take(false);
      return Promise.reject(new Error(`the slot continued with token ${open.token}, not the tokens evaluated`));
    }
    attach(open.item);
    open.take(true);
    return open.result;
  }

  /** The slot's generation loop ended: its continuation, if any, is dropped; returns its item. */
  drop(slot: object): Item | undefined {
    const open = this.open.get(slot);
    if (!open) return undefined;
    this.open.delete(slot);
    open.take(false);
    return open.item;
  }
}
