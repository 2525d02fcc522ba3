// The routing bench's think time (test/bench/routing.ts): a conversation's pause between an answer's end and its next
// turn, as a chat user reads and types. Default none: the closed loop of earlier rounds (decision 0019), where the pod
// that just answered is the least loaded one the moment its answer ends, so LeastLoad keeps most turns on it.
import { z } from "zod";

export const BenchRoutingThinkSchema = z.object({
  /** The pause's mean, ms (0: none). */
  GANTRY_BENCH_THINK_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  /** exponential (a user's pauses: many short, a few long) or fixed (every pause the mean). */
  GANTRY_BENCH_THINK: z.enum(["exponential", "fixed"]).default("exponential"),
});
export type Think = z.infer<typeof BenchRoutingThinkSchema>;

/** A table title's words for the think time. */
export const thinkNote = (t: Think): string =>
  t.GANTRY_BENCH_THINK_MS === 0
    ? "no pause between turns"
    : `${t.GANTRY_BENCH_THINK === "fixed" ? "a fixed" : "an exponential"} pause between turns, mean ${t.GANTRY_BENCH_THINK_MS} ms`;

/** mulberry32: a small seeded generator, so a conversation's pauses are the same in every run and strategy. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The pauses, ms, before each of `count` turns of the conversation with this seed. */
export function thinkPauses(t: Think, seed: number, count: number): number[] {
  const mean = t.GANTRY_BENCH_THINK_MS;
  if (mean === 0 || t.GANTRY_BENCH_THINK === "fixed") return Array.from({ length: count }, () => mean);
  const next = seeded(seed);
  // Inverse transform: -mean·ln(1 − u) for u uniform in [0, 1).
  return Array.from({ length: count }, () => Math.round(-mean * Math.log(1 - next())));
}
