// The generation loop on one sequence: KV prefix reuse, token-by-token evaluation with our own stop rules, incremental
// UTF-8-safe text, stop strings held back until decided, and abort that frees the sequence after at most one step.
import { LlamaGrammarEvaluationState, type LlamaContextSequence, type LlamaGrammar, type Token } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import type { Arrival, Arrivals } from "./arrivals.ts";
import type { LoadedModel } from "./loaded-model.ts";
import type { EngineMetricsSink } from "./metrics.ts";
import { penaltiesOff, repeatWindow, type ResolvedSampling } from "./sampling.ts";
import { StopStringMatcher } from "./stop-matcher.ts";
import { TokenTextStream } from "./token-text-stream.ts";
import type { DoneReason, GenerationEvent } from "./types.ts";

export interface GenerationJob {
  loaded: LoadedModel;
  sequence: LlamaContextSequence;
  promptTokens: Token[];
  stopStrings: string[];
  sampling: ResolvedSampling;
  grammar: LlamaGrammar | undefined;
  signal: AbortSignal;
  metrics: EngineMetricsSink;
  /** hrtime (ns) when the request arrived, and the load time it paid. */
  startedNs: bigint;
  loadDurationNs: number;
  /** Burst admission (arrivals.ts): this request's own announcement and the engine's board; absent = no waiting. */
  admission?: { arrival: Arrival | undefined; arrivals: Arrivals };
}

/** Longest wait for announced requests before a prompt is queued: a few ms is typical; the bound covers slow bodies. */
export const ADMISSION_WAIT_MS = 50;

export const contextOverflow = (tokens: number, contextLength: number): AppError =>
  new AppError("CONTEXT_OVERFLOW", `prompt is too long: ${tokens} tokens, context length is ${contextLength}`);

export const commonPrefixLength = (a: readonly Token[], b: readonly Token[]): number => {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
};

/** Keeps the part of the sequence's KV cache that matches the prompt; returns the tokens still to evaluate (at least one). */
export async function reusePrefix(sequence: LlamaContextSequence, prompt: Token[]): Promise<Token[]> {
  const keep = Math.min(commonPrefixLength(sequence.contextTokens, prompt), prompt.length - 1);
  if (keep <= 0) await sequence.clearHistory();
  else if (sequence.nextTokenIndex > keep) await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.nextTokenIndex }]);
  return prompt.slice(keep);
}

export async function* runGeneration(job: GenerationJob): AsyncGenerator<GenerationEvent> {
  const { loaded, sequence, sampling } = job;
  const model = loaded.model;
  const name = loaded.spec.name;
  const toEvaluate = await reusePrefix(sequence, job.promptTokens);
  const history: Token[] = [...job.promptTokens];
  const window = repeatWindow(sampling, loaded.contextLength);
  const iterator = sequence.evaluate(toEvaluate, {
    temperature: sampling.temperature,
    topK: sampling.topK,
    topP: sampling.topP,
    minP: sampling.minP,
    ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
    ...(penaltiesOff(sampling) ? {} : {
      repeatPenalty: {
        punishTokens: () => history.slice(-window),
        maxPunishTokens: window,
        penalty: sampling.repeatPenalty,
        frequencyPenalty: sampling.frequencyPenalty,
        presencePenalty: sampling.presencePenalty,
      },
    }),
    ...(job.grammar ? { grammarEvaluationState: new LlamaGrammarEvaluationState({ model, grammar: job.grammar }) } : {}),
    yieldEogToken: true,
  });
  const text = new TokenTextStream((tokens, last) => model.detokenize(tokens as Token[], false, last as Token[]));
  const stops = new StopStringMatcher([...sampling.stop, ...job.stopStrings]);
  const sync = loaded.decodeSync;
  const aborted = new Promise<"abort">((resolve) => {
    if (job.signal.aborted) resolve("abort");
    else job.signal.addEventListener("abort", () => resolve("abort"), { once: true });
  });
  const evalStartNs = process.hrtime.bigint();
  let firstTokenNs: bigint | undefined;
  let evalCount = 0;
  let reason: DoneReason = "stop";
  let pendingNext: Promise<IteratorResult<Token>> | undefined;
  // The consumer (an HTTP response, say) gets each piece of text after the next decode was queued, so its work overlaps
  // that decode instead of adding to every token's latency. A sequence whose token arrived while its consumer still
  // holds the text is "suspended": the others' decode steps do not wait for it.
  let consuming = false;
  let suspended = false;
  const suspend = () => { if (!suspended) { suspended = true; sync.suspend(); } };
  const queueNext = () => {
    sync.beforeDecode();
    const next = iterator.next();
    pendingNext = next;
    const arrived = () => {
      sync.afterDecode();
      if (consuming && pendingNext === next) suspend();
    };
    next.then(arrived, arrived);
  };
  // Requests received together are prefilled together. The wait comes before this sequence counts as active, so the
  // running streams' decode steps never wait for a newcomer that is itself waiting for a late arrival.
  job.admission?.arrival?.settle();
  await job.admission?.arrivals.quiet(ADMISSION_WAIT_MS);
  sync.enter();
  try {
    // Join the next decode step with the others rather than queueing the prompt while one is in flight.
    await sync.gate();
    queueNext();
    for (;;) {
      const result = await Promise.race([pendingNext!, aborted]);
      if (result === "abort") { reason = "abort"; break; }
      pendingNext = undefined;
      if (result.done) break;
      const token = result.value;
      if (firstTokenNs === undefined) {
        firstTokenNs = process.hrtime.bigint();
        job.metrics.onFirstToken?.(name, Number(firstTokenNs - job.startedNs) / 1e9);
      }
      if (model.isEogToken(token)) break;
      evalCount++;
      history.push(token);
      const piece = stops.push(text.push(token));
      const end: DoneReason | undefined = piece.stopped ? "stop"
        : job.signal.aborted ? "abort"
        : sampling.maxTokens !== undefined && evalCount >= sampling.maxTokens ? "length"
        // The token just sampled still has to be evaluated: it needs a free slot in the context.
        : sequence.nextTokenIndex + 1 > loaded.contextLength ? "length"
        : undefined;
      if (end === undefined) {
        await sync.gate();
        queueNext();
      }
      if (piece.emit && end !== "abort") {
        consuming = true;
        if (!pendingNext) suspend();
        try {
          yield { type: "text", text: piece.emit };
        } finally {
          consuming = false;
          if (suspended) { suspended = false; sync.resume(); }
        }
      }
      if (end !== undefined) { reason = end; break; }
    }
    if (reason !== "abort") {
      const rest = stops.push(text.flush());
      const tail = rest.stopped ? rest.emit : rest.emit + stops.flush();
      if (tail) yield { type: "text", text: tail };
    }
  } finally {
    sync.leave();
    // A decode already queued for this sequence finishes within one step; wait for it before the sequence is reused.
    if (pendingNext) await pendingNext.catch(() => undefined);
    await iterator.return(undefined).catch(() => undefined);
  }
  const endNs = process.hrtime.bigint();
  const promptEndNs = firstTokenNs ?? endNs;
  job.metrics.onTokens?.(name, job.promptTokens.length, evalCount);
  yield {
    type: "done",
    stats: {
      doneReason: reason,
      totalDurationNs: Number(endNs - job.startedNs),
      loadDurationNs: job.loadDurationNs,
      promptEvalCount: job.promptTokens.length,
      promptEvalDurationNs: Number(promptEndNs - evalStartNs),
      evalCount,
      evalDurationNs: Number(endNs - promptEndNs),
    },
  };
}
