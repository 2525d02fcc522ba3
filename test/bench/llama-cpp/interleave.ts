// Runs scenarios on several servers interleaved — per round and scenario each target in turn (A B, then B A in the next
// round, so neither side always runs first) — and records, per run: aggregate generated tokens/s as the client sees
// it, time to first token, the server's own prompt and generation speed, and decode calls per token position.
import { settle } from "../settle.ts";
import type { BenchTarget, Completion } from "./targets.ts";

export interface Scenario {
  key: string;
  concurrency: number;
  nPredict: number;
  /** A long prompt (prompt-processing speed) instead of a short one. */
  longPrompt?: boolean;
  /** Times the group of concurrent requests runs back to back per run (default 1): more tokens for short, noisy cells. */
  repeat?: number;
}

export interface RunResult {
  /** Generated tokens of all requests / wall time from the first request sent to the last response done (all repeats). */
  aggregateTps: number;
  ttftMs: number[];
  /** Server-reported speeds, averaged over the run's requests. */
  promptTps: number;
  genTps: number;
  promptTokens: number;
  /** Decode calls during the run / generated tokens per request (1.0 = one step per token position for all streams). */
  stepsPerPosition: number;
  /** Requests that generated fewer tokens than asked (should be 0: the models never emit end-of-generation). */
  short: number;
}

export type Results = Map<string, Map<string, RunResult[]>>;

const STORY = "the sea was calm and the ships sailed on under a pale sky while the crew sang old songs about home and far away harbours";

/** A prompt no earlier request started with (a unique tag first), so no server can reuse a cached prefix. */
export function promptFor(tag: string, long: boolean): string {
  if (!long) return `${tag}: Tell me a long story about ${STORY}.`;
  return `${tag}: ${Array.from({ length: 14 }, (_, i) => `Chapter ${i + 1}. ${STORY}.`).join(" ")}`;
}

export async function runScenario(target: BenchTarget, s: Scenario, round: number): Promise<RunResult> {
  const before = await target.decodeSteps();
  const t0 = performance.now();
  const repeat = s.repeat ?? 1;
  const runs: Completion[] = [];
  for (let rep = 0; rep < repeat; rep++) {
    runs.push(...await Promise.all(Array.from({ length: s.concurrency }, (_, i) =>
      target.complete(promptFor(`r${round}-${rep}-${s.key}-${i}`, s.longPrompt ?? false), s.nPredict, 1000 * round + 100 * rep + i))));
  }
  const seconds = (performance.now() - t0) / 1000;
  const steps = (await target.decodeSteps()) - before;
  const gen = runs.reduce((n, r) => n + r.genTokens, 0);
  const avg = (f: (r: Completion) => number) => runs.reduce((n, r) => n + f(r), 0) / runs.length;
  return {
    aggregateTps: gen / seconds,
    ttftMs: runs.map((r) => r.ttftMs),
    promptTps: avg((r) => (r.promptMs > 0 ? r.promptTokens / (r.promptMs / 1000) : Number.NaN)),
    genTps: avg((r) => (r.genMs > 0 ? r.genTokens / (r.genMs / 1000) : Number.NaN)),
    promptTokens: avg((r) => r.promptTokens),
    stepsPerPosition: steps / (s.nPredict * repeat),
    short: runs.filter((r) => r.genTokens < s.nPredict).length,
  };
}

/** Every scenario on every target for `rounds` rounds, interleaved; progress on stderr. */
export async function interleave(targets: BenchTarget[], scenarios: Scenario[], rounds: number, tag: string, afterRound?: () => Promise<void>): Promise<Results> {
  const results: Results = new Map(targets.map((t) => [t.label, new Map(scenarios.map((s) => [s.key, [] as RunResult[]]))]));
  for (let round = 0; round < rounds; round++) {
    for (const s of scenarios) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        // Each run starts on quiet CPUs: the previous server's threadpool may still be spinning for its next graph.
        await settle();
        const r = await runScenario(t, s, round);
        results.get(t.label)!.get(s.key)!.push(r);
        process.stderr.write(`${tag} round ${round + 1}/${rounds} ${s.key} ${t.label}: ${r.aggregateTps.toFixed(1)} tok/s, ttft ${Math.max(...r.ttftMs).toFixed(0)} ms max, ${r.stepsPerPosition.toFixed(2)} steps/position${r.short ? `, ${r.short} short` : ""}\n`);
      }
    }
    await afterRound?.();
  }
  return results;
}

/** Warm-up: loads the model and touches its pages on every target. */
export async function warm(targets: BenchTarget[]): Promise<void> {
  for (const t of targets) await t.complete(promptFor(`warm-${t.label}`, false), 4, 1);
}
