// What the engine reports for monitoring. The HTTP layer implements this sink with prom-client; every callback is
// optional so tests and the CLI can pass nothing. The model name comes first so it can become a label.
import type { DecodeTime } from "./decode-clock.ts";

export interface EngineMetricsSink {
  /** A model finished loading. */
  onLoad?(model: string, seconds: number): void;
  onUnload?(model: string): void;
  /** A generation finished: prompt tokens and generated tokens. */
  onTokens?(model: string, promptTokens: number, generatedTokens: number): void;
  /** Time from request arrival to the first generated token. */
  onFirstToken?(model: string, seconds: number): void;
  /**
   * One llama_decode call. `batchTokens` = tokens in the batch, `sequences` = sequences the call carried (generating or
   * evaluating their prompt), `activeSequences` = sequences of that model inside a generation at the time.
   * Batch fill = sequences / activeSequences of a step's first call (1 = every active sequence was in the step).
   * `continued`: a further call of the current decode step (a burst of prompts larger than the batch), not a new step.
   */
  onDecode?(model: string, batchTokens: number, sequences: number, activeSequences: number, continued: boolean): void;
  /**
   * The step pipeline (step-pipeline.ts): `step` = a decode step started with tokens its streams did not have yet;
   * `dropped` = such a token whose stream ended without it (a stop string, an abort), left decoded in its sequence.
   */
  onPipeline?(model: string, event: "step" | "dropped"): void;
  /** Where the model's accelerator time went (decode-clock.ts), at each decode call's end or when its work ended. */
  onDecodeTime?(model: string, time: DecodeTime): void;
  /** Requests waiting for a free sequence of the model. */
  onQueueDepth?(model: string, depth: number): void;
  /** Sequences of the model busy with a request. */
  onBusySequences?(model: string, busy: number): void;
  /**
   * A busy sequence moved down into a free one's place to close a gap among the busy sequence ids (a decode step
   * spanning a gap costs an extra pass over the weights); `ok` false = the move failed and the model stops moving them.
   */
  onSequenceMove?(model: string, ok: boolean): void;
  /** A vision model's projector encoded an image (images in a sequence's cached prefix are not encoded again). */
  onImageEncode?(model: string, seconds: number): void;
  /**
   * The RAM prompt cache was asked for a prompt its sequence held too little of: `hit` = a saved state was
   * restored (`restoredTokens` of the prompt), `miss` = none held more, `failed` = the runtime refused the saved state
   * (the prompt was evaluated instead).
   */
  onPromptCache?(model: string, outcome: "hit" | "miss" | "failed", restoredTokens: number): void;
  /** Bytes of KV state the RAM prompt cache holds (all models). */
  onPromptCacheBytes?(bytes: number): void;
  /** A request was refused because the queue was full. */
  onRejected?(model: string): void;
}

export const noMetrics: EngineMetricsSink = {};
