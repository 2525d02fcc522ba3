// The generation loop on one sequence: KV prefix reuse, token-by-token evaluation with our own stop rules, incremental
// UTF-8-safe text, stop strings held back until decided, and abort that frees the sequence after at most one step.
import { randomInt } from "node:crypto";
import { LlamaGrammarEvaluationState, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import type { OutputParser, ParsedEvent } from "../chat/output-parser.ts";
import type { Logger } from "../common/logger.ts";
import { acceptGrammarTokens } from "./native/node-llama-cpp.ts";
import { shiftDiscard } from "./fit-prompt.ts";
import type { Arrival, Arrivals } from "./arrivals.ts";
import type { LoadedModel } from "./loaded-model.ts";
import { isImageCell, type ImagePrefill } from "./image-prompt.ts";
import type { EngineMetricsSink } from "./metrics.ts";
import { repeatWindow, type ResolvedSampling } from "./sampling.ts";
import { commonPrefixLength } from "./prompt-cache.ts";
import type { Slot } from "./slot-loop.ts";
import { verifyDraft, type Drafter } from "./speculation.ts";
import { StopStringMatcher } from "./stop-matcher.ts";
import { TokenSampler, type PositionLogprobs } from "./token-sampler.ts";
import { TokenTextStream } from "./token-text-stream.ts";
import type { DoneReason, GenerationEvent, OutputTokenLogprob, TokenLogprob } from "./types.ts";

export interface GenerationJob {
  loaded: LoadedModel;
  slot: Slot;
  promptTokens: Token[];
  stopStrings: string[];
  sampling: ResolvedSampling;
  grammar: LlamaGrammar | undefined;
  signal: AbortSignal;
  metrics: EngineMetricsSink;
  /** Where a refused prompt-cache state is logged. */
  logger?: Logger | undefined;
  /** hrtime (ns) when the request arrived, and the load time it paid. */
  startedNs: bigint;
  loadDurationNs: number;
  /** Burst admission (arrivals.ts): this request's own announcement and the engine's board; absent = no waiting. */
  admission?: { arrival: Arrival | undefined; arrivals: Arrivals };
  /** Report each output token's log probability and `top` alternatives. */
  logprobs?: { top: number };
  /** Put the exchange's token ids in the final stats. */
  returnTokens?: boolean;
  /** Shift the context when it is full (Ollama's `shift`), keeping this many tokens at the front; absent: stop. */
  shiftKeep?: number;
  /** A prompt with images (promptTokens then hold the images' positions as stand-ins): how to evaluate it. */
  images?: ImagePrefill;
  /**
   * How to read the output (chat with thinking or tools): its parser, and the tool calls' grammar to apply once a call
   * begins (a grammar applied from the first token is `grammar`).
   */
  output?: { parser: OutputParser; lazyGrammar?: LlamaGrammar | undefined };
  /** Speculative decoding (speculation.ts): drafts to verify with each generated token. */
  drafter?: Drafter;
}

export { commonPrefixLength };

/**
 * Keeps the part of the slot's KV cache that matches the prompt (restored from the RAM prompt cache where that holds
 * more of it: SlotLoop.reuse), and reports the cache's outcome; returns the tokens still to evaluate (at least one).
 */
export async function reusePrefix(
  job: Pick<GenerationJob, "loaded" | "slot" | "promptTokens" | "metrics" | "images" | "logger">,
): Promise<Token[]> {
  const { loaded, slot, promptTokens: prompt } = job;
  const keep = job.images?.keep ?? ((n: number) => n);
  const reuse = await loaded.slots.reuse(slot, prompt, (held) =>
    keep(Math.min(commonPrefixLength(held, prompt), prompt.length - 1)),
  );
  if (reuse.looked) {
    const outcome = reuse.failed ? "failed" : reuse.restored > 0 ? "hit" : "miss";
    job.metrics.onPromptCache?.(loaded.spec.name, outcome, reuse.restored);
    if (reuse.failed)
      job.logger?.warn(
        { model: loaded.spec.name, promptTokens: prompt.length },
        "the runtime refused a saved prompt state; evaluating the prompt instead",
      );
  }
  return prompt.slice(slot.tokens.length);
}

export async function* runGeneration(job: GenerationJob): AsyncGenerator<GenerationEvent> {
  const { loaded, slot, sampling } = job;
  const model = loaded.model;
  const name = loaded.spec.name;
  const slots = loaded.slots;
  let toEvaluate = await reusePrefix(job);
  const promptCachedCount = job.promptTokens.length - toEvaluate.length;
  // The tokens of the exchange (for repeat penalties and the returned context): no image positions.
  const history: Token[] = job.images ? job.promptTokens.filter((t) => !isImageCell(t)) : [...job.promptTokens];
  const promptHistory = history.length;
  // Without a seed, each request draws its own (as Ollama does).
  const sampler = new TokenSampler(
    slots.native,
    sampling,
    sampling.seed ?? randomInt(2 ** 31),
    repeatWindow(sampling, loaded.contextLength),
    job.grammar ? new LlamaGrammarEvaluationState({ model, grammar: job.grammar }) : undefined,
    job.logprobs?.top,
  );
  const sample = job.logprobs
    ? (batchLogitIndex: number) =>
        sampler.sampleWithLogprobs(slots.sampleToken, slots.tokenLogits, batchLogitIndex, history)
    : (batchLogitIndex: number) => sampler.sample(slots.sampleToken, batchLogitIndex, history);
  // Log probabilities of the tokens whose text has not gone out yet (it may be held back: UTF-8, stop strings).
  const pendingLogprobs: OutputTokenLogprob[] | undefined = job.logprobs ? [] : undefined;
  const textEvent = (text: string): GenerationEvent =>
    pendingLogprobs?.length ? { type: "text", text, logprobs: pendingLogprobs.splice(0) } : { type: "text", text };
  const text = new TokenTextStream((tokens, last) => model.detokenize(tokens as Token[], false, last as Token[]));
  const output = job.output;
  let grammarApplied = job.grammar !== undefined;
  /** The tool calls' grammar from now on, fed the text already written past the call's marker. */
  const applyGrammar = (after: string) => {
    grammarApplied = true;
    const state = new LlamaGrammarEvaluationState({ model, grammar: output!.lazyGrammar! });
    try {
      acceptGrammarTokens(model, state, after ? model.tokenize(after, false) : []);
      sampler.useGrammar(state);
    } catch {
      // What was written does not fit the grammar (a stop string held the marker back): the call is read as written.
    }
  };
  /** The events of emitted output text: as it is, or split into thinking, content and tool calls. */
  const outputEvents = (emitted: string, final: boolean): GenerationEvent[] => {
    if (!output) return emitted || pendingLogprobs?.length ? [textEvent(emitted)] : [];
    const parsed = output.parser.push(emitted);
    if (final) parsed.push(...output.parser.flush());
    const events: GenerationEvent[] = [];
    for (const p of parsed) {
      if (p.kind === "trigger") {
        if (!grammarApplied && output.lazyGrammar && !final) applyGrammar(p.after);
      } else if (p.kind === "content") events.push(textEvent(p.text));
      else events.push(parsedEvent(p));
    }
    if (pendingLogprobs?.length) events.push(textEvent(""));
    return events;
  };
  const stops = new StopStringMatcher([...sampling.stop, ...job.stopStrings]);
  const aborted = new Promise<"abort">((resolve) => {
    if (job.signal.aborted) resolve("abort");
    else job.signal.addEventListener("abort", () => resolve("abort"), { once: true });
  });
  const evalStartNs = process.hrtime.bigint();
  let firstTokenNs: bigint | undefined;
  let evalCount = 0;
  let reason: DoneReason = "stop";
  let pendingNext: Promise<Token | Token[]> | undefined;
  /**
   * Tokens a verified draft gave that the loop has not taken yet: all but the last are in the KV cache already (the
   * accepted drafted tokens), the last one is not.
   */
  let ready: Token[] = [];
  const draft = { drafted: 0, accepted: 0 };
  // The consumer (an HTTP response, say) gets each piece of text after the next decode was queued, so its work overlaps
  // that decode instead of adding to every token's latency. A sequence whose token arrived while its consumer still
  // holds the text is "suspended": the others' decode steps do not wait for it.
  let consuming = false;
  let suspended = false;
  /** Set when the loop ends: no token of this stream is decoded ahead any more (step-pipeline.ts). */
  let leaving = false;
  /**
   * Whether the token just sampled may be decoded before this loop has it (the step pipeline): not one that ends the
   * generation (end of generation, the token budget), needs a context shift or a draft first, nor while the client
   * holds text (its decode would wait for this loop). A stop string, an abort or an error may still end it: the token
   * then stays in the sequence's cache, unsampled after.
   */
  const continues = (token: Token): boolean =>
    !leaving &&
    !consuming &&
    !job.drafter &&
    !job.signal.aborted &&
    !model.isEogToken(token) &&
    (sampling.maxTokens === undefined || evalCount + 1 < sampling.maxTokens) &&
    // The token and the one after it fit: the check before queueing (below) sees the same as without the pipeline.
    slot.tokens.length + 2 <= loaded.contextLength;
  const suspend = () => {
    if (!suspended) {
      suspended = true;
      slots.suspend();
    }
  };
  /** Queues `tokens`, with a draft after a generated token; a promise while a draft model drafts. */
  const queueNext = (tokens: Token[]): Promise<void> | undefined => {
    const drafting =
      tokens.length === 1 && job.drafter
        ? job.drafter.draft(
            history,
            // The tokens still allowed, and room in the context for the token and its draft.
            Math.min(
              sampling.maxTokens === undefined ? Infinity : sampling.maxTokens - evalCount - 1,
              loaded.contextLength - slot.tokens.length - 2,
            ),
          )
        : [];
    if (Array.isArray(drafting)) {
      queueDrafted(tokens, drafting);
      return undefined;
    }
    // The draft model decodes meanwhile: the target's steps do not wait for this stream.
    slots.suspend();
    return drafting.then(
      (drafted) => {
        slots.resume();
        queueDrafted(tokens, drafted);
      },
      (err: unknown) => {
        slots.resume();
        throw err;
      },
    );
  };
  const queueDrafted = (tokens: Token[], drafted: Token[]) => {
    const next: Promise<Token | Token[]> =
      drafted.length > 0
        ? slots.evaluateDraft(slot, tokens[0]!, drafted, (rows) =>
            verifyDraft(rows, drafted, history, (row) => sampler.sample(slots.sampleToken, row, history)).then(
              (sampled) => {
                draft.drafted += drafted.length;
                draft.accepted += sampled.length - 1;
                job.drafter?.verified?.(drafted.length, sampled.length - 1);
                return sampled;
              },
            ),
          )
        : slots.evaluate(slot, tokens, sample, continues);
    pendingNext = next;
    const arrived = () => {
      if (consuming && pendingNext === next) suspend();
    };
    next.then(arrived, arrived);
  };
  // Requests received together are prefilled together. The wait comes before this sequence counts as active, so the
  // running streams' decode steps never wait for a newcomer that is itself waiting for a late arrival.
  job.admission?.arrival?.settle();
  await job.admission?.arrivals.quiet();
  if (job.images) toEvaluate = await job.images.prefill(slot, job.signal);
  slots.enter();
  try {
    // Join the next decode step with the others rather than queueing the prompt while one is in flight.
    await slots.gate(slot);
    await queueNext(toEvaluate);
    for (;;) {
      let token: Token;
      if (ready.length > 0) token = ready.shift()!;
      else {
        const got = await Promise.race([pendingNext!, aborted]);
        if (got === "abort") {
          reason = "abort";
          break;
        }
        pendingNext = undefined;
        if (Array.isArray(got)) [token, ...ready] = got as [Token, ...Token[]];
        else token = got;
      }
      if (firstTokenNs === undefined) {
        firstTokenNs = process.hrtime.bigint();
        job.metrics.onFirstToken?.(name, Number(firstTokenNs - job.startedNs) / 1e9);
      }
      if (model.isEogToken(token)) break;
      evalCount++;
      history.push(token);
      if (pendingLogprobs) {
        const p = sampler.takeLogprobs();
        // Spelled as the output text spells it: after the tokens generated before it (TokenTextStream).
        const before = history.slice(Math.max(promptHistory, history.length - 5), -1);
        if (p) pendingLogprobs.push(outputLogprob(model, p, before));
      }
      const piece = stops.push(text.push(token));
      let end: DoneReason | undefined = piece.stopped
        ? "stop"
        : job.signal.aborted
          ? "abort"
          : sampling.maxTokens !== undefined && evalCount >= sampling.maxTokens
            ? "length"
            : undefined;
      // The token just sampled still has to be evaluated: it needs a free slot in the context, made by a shift.
      if (end === undefined && slot.tokens.length + 1 > loaded.contextLength) {
        const keep = job.shiftKeep;
        const shifted = keep !== undefined && (await slots.shift(slot, keep, shiftDiscard(slot.tokens.length, keep)));
        if (!shifted) end = "length";
      }
      // Ending: a token decoded ahead for this stream goes before the last text does, so the step decoding it never
      // waits for this stream's consumer (which may hold that text for as long as it likes).
      if (end !== undefined) slots.drop(slot);
      // Parsed before the next token is queued: a tool call's marker applies the grammar to that token already.
      const events = piece.emit && end !== "abort" ? outputEvents(piece.emit, false) : [];
      // A token a draft gave with more after it is in the KV cache already: the next one is ready.
      if (end === undefined && ready.length === 0) {
        await slots.gate(slot);
        const drafting = queueNext([token]);
        if (drafting) await drafting;
      }
      if (events.length > 0) {
        consuming = true;
        if (!pendingNext) suspend();
        try {
          for (const ev of events) yield ev;
        } finally {
          consuming = false;
          if (suspended) {
            suspended = false;
            slots.resume();
          }
        }
      }
      if (end !== undefined) {
        reason = end;
        break;
      }
    }
    if (reason !== "abort") {
      const rest = stops.push(text.flush());
      const tail = rest.stopped ? rest.emit : rest.emit + stops.flush();
      // Every output token has its log probability, also those whose text never came out (a stop string, an
      // incomplete UTF-8 sequence at the end).
      for (const ev of outputEvents(tail, true)) yield ev;
    }
  } finally {
    leaving = true;
    slots.leave(slot);
    // A decode already queued for this sequence finishes within one step; wait for it before the sequence is reused.
    if (pendingNext) await pendingNext.catch(() => undefined);
    sampler.dispose();
    job.drafter?.dispose?.();
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
      promptCachedCount,
      promptEvalDurationNs: Number(promptEndNs - evalStartNs),
      evalCount,
      evalDurationNs: Number(endNs - promptEndNs),
      ...(job.returnTokens ? { tokens: history } : {}),
      ...(job.drafter ? { draft: { ...draft } } : {}),
    },
  };
}

/** A parsed piece of output other than content, as the engine reports it. */
function parsedEvent(p: Exclude<ParsedEvent, { kind: "content" | "trigger" }>): GenerationEvent {
  switch (p.kind) {
    case "thinking":
      return { type: "thinking", text: p.text };
    case "call-begin":
      return { type: "tool_call_begin", index: p.index, name: p.name };
    case "call-arguments":
      return { type: "tool_call_arguments", index: p.index, text: p.text };
    case "call":
      return {
        type: "tool_call",
        index: p.index,
        call: p.call,
        argumentsText: p.argumentsText,
        ...(p.cut ? { cut: true } : {}),
      };
  }
}

/** A token's text where it stands after `before` (a word-initial token keeps its space), and its UTF-8 bytes. */
const tokenLogprob = (model: LlamaModel, token: number, logprob: number, before: readonly Token[]): TokenLogprob => {
  const text = model.detokenize([token as Token], true, before);
  return { token: text, logprob, bytes: [...Buffer.from(text, "utf8")] };
};

/** A sampled token's log probabilities as the APIs report them; `before`: the tokens just before it. */
function outputLogprob(model: LlamaModel, p: PositionLogprobs, before: readonly Token[]): OutputTokenLogprob {
  return {
    ...tokenLogprob(model, p.token, p.logprob, before),
    topLogprobs: p.top.map((t) => tokenLogprob(model, t.token, t.logprob, before)),
  };
}
