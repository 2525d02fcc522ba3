// The one responder of every generation route (/api/generate, /api/chat, /v1/chat/completions, /v1/completions):
// one JSON body, or a stream of lines that ends with the final object(s) or, when generation fails after the headers
// went out, with one error line in the API's own error shape. Each API is a translator of the engine's events into its
// objects (NativeTranslator here, the OpenAI ones in openai/routes.ts) plus its stream format (NDJSON or SSE); an API
// served on another's answers (/v1/responses, /v1/messages on chat completions) adds an AnswerAdapter.
import type { Response } from "express";
import { toAppError, type AppError } from "../common/errors.ts";
import type { GenerationStats } from "../engine/types.ts";
import { addToAnswer, emptyAnswer, type Answer, type OutputEvent } from "./answer.ts";
import type { ServerDeps } from "./deps.ts";
import { errorBody, logFault, type ErrorShape } from "./errors.ts";
import { drain, startGeneration, withInFlight, type GenerationPlan } from "./generation.ts";
import { clientAbortSignal, startNdjson, startSse, type LineStream } from "./streams.ts";

export interface GenerationTranslator {
  /** The API's error shape (a mid-stream error line) and stream format. */
  api: LineApi;
  /**
   * The streamed object of an output event (undefined: the API streams nothing for it); `first` for the stream's
   * first object. A text event's `logprobs` are there when they were asked for.
   */
  piece(ev: OutputEvent, first: boolean): object | undefined;
  /** The objects that end a stream; `answer`: what the stream carried, added up. */
  end(stats: GenerationStats, answer: Answer): object[];
  /** The whole answer, when the client asked not to stream. */
  full(answer: Answer, stats: GenerationStats): object;
}

/** The APIs with a generation translator of their own (the others are served on these: AnswerAdapter). */
type LineApi = Exclude<ErrorShape, "anthropic">;

const STREAM_FORMATS: Record<LineApi, (res: Response) => LineStream> = { ollama: startNdjson, openai: startSse };

/**
 * An API served on another API's answers, as Ollama's middleware serves /v1/responses and /v1/messages on chat
 * completions: every object the translator makes is translated once more, with the API's own stream format.
 */
export interface AnswerAdapter {
  /** The whole answer, from the translator's. */
  full(answer: object): object;
  /** Starts the response's stream. */
  stream(res: Response): AdaptedStream;
}

export interface AdaptedStream {
  /** One object the translator streamed. */
  write(obj: object): void;
  /** Ends the stream with an error (the headers went out before it). */
  fail(e: AppError): void;
  end(): void;
}

/** The translator's own stream: its objects as lines, an error as the last line in the API's shape. */
function lineStream(api: LineApi, res: Response): AdaptedStream {
  const out = STREAM_FORMATS[api](res);
  return { write: out.write, fail: (e) => out.write(errorBody(api, e)), end: out.end };
}

export async function respondGeneration(
  deps: ServerDeps,
  res: Response,
  plan: GenerationPlan,
  stream: boolean,
  t: GenerationTranslator,
  adapter?: AnswerAdapter,
): Promise<void> {
  const t0 = process.hrtime.bigint();
  const signal = clientAbortSignal(res);
  await withInFlight(deps, async () => {
    // Errors before any output (load, overflow, queue full) are thrown here and answered with their status code.
    const started = await startGeneration(deps.engine, plan, res, signal);
    const answer = emptyAnswer(plan.logprobs !== undefined);
    if (!stream) {
      const stats = await drain(deps, started, plan.model.name, t0, (ev) => addToAnswer(answer, ev));
      if (stats.doneReason === "abort") return;
      const whole = t.full(answer, stats);
      res.json(adapter ? adapter.full(whole) : whole);
      return;
    }
    const out = adapter ? adapter.stream(res) : lineStream(t.api, res);
    let first = true;
    try {
      const stats = await drain(deps, started, plan.model.name, t0, (ev) => {
        addToAnswer(answer, ev);
        if (ev.type === "text" && !ev.text && !ev.logprobs) return;
        const obj = t.piece(ev.type === "text" && plan.logprobs ? { ...ev, logprobs: ev.logprobs ?? [] } : ev, first);
        if (!obj) return;
        out.write(obj);
        first = false;
      });
      for (const obj of t.end(stats, answer)) out.write(obj);
    } catch (err) {
      // Headers are sent: the error is the stream's last line, through the catalogue like any other answer.
      const e = toAppError(err);
      logFault(deps.logger, e, res.req);
      out.fail(e);
    }
    out.end();
  });
}
