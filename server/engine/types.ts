// The engine contract: what the HTTP layer asks of the model runtime. Implemented on node-llama-cpp in
// server/engine/*.ts. Everything here is plain data so routes and tests can be written against it.
import type { ModelOptions, ModelSpec } from "../store/types.ts";
import type { ChatMessage, ThinkSetting, ToolCall, ToolsRequest } from "../chat/types.ts";
import type { Arrival } from "./arrivals.ts";
import type { FlashAttention, KvCacheType } from "../common/kv-cache-settings.ts";

/** Ollama runtime options (the subset the engine honours): the options a model stores, which requests override. */
export type SamplingOptions = ModelOptions;

export type { ChatMessage, FunctionTool, ThinkSetting, ToolCall, ToolChoice, ToolsRequest } from "../chat/types.ts";

/** A model as the store resolves it (server/store/types.ts): everything the engine needs to load and prompt it. */
export type { ModelSpec };

/** What to generate from. */
export type PromptInput =
  /** Chat history, formatted with the model's template (GGUF chat template, or the TEMPLATE override). */
  | { kind: "chat"; messages: ChatMessage[] }
  /**
   * A single prompt (/api/generate, /v1/completions). Formatted as a user turn (plus `system`) through the template,
   * or through `template` when given (Go template with .System/.Prompt), or passed verbatim when `raw`.
   */
  | {
      kind: "prompt";
      prompt: string;
      system?: string;
      template?: string;
      raw?: boolean;
      images?: Uint8Array[];
      /**
       * Token ids of an earlier exchange (the `context` an /api/generate answer returned): they go in front of the
       * formatted prompt, so the KV cache that holds them is reused. Ids outside the vocabulary are a BAD_REQUEST.
       */
      context?: number[];
    };

/** JSON-constrained output: any JSON value ("json"), or a JSON schema object. */
export type OutputFormat = "json" | { schema: Record<string, unknown> };

export interface GenerateRequest {
  model: ModelSpec;
  input: PromptInput;
  /** Request options; merged over model.parameters by the engine. */
  options: SamplingOptions;
  format?: OutputFormat;
  /**
   * Milliseconds to keep the model loaded after this request; null = forever; 0 = unload when done. Undefined = server
   * default.
   */
  keepAliveMs?: number | null;
  /** Aborted when the client disconnects: generation stops and the sequence is freed at once. */
  signal: AbortSignal;
  /**
   * This request's announcement (Engine.announce), settled by the engine when the request reaches its first decode
   * step.
   */
  arrival?: Arrival;
  /** Return each output token's log probability and its `top` most likely alternatives (0–20). */
  logprobs?: { top: number };
  /** Return the token ids of the whole exchange (prompt and output) in the final stats (/api/generate's `context`). */
  returnTokens?: boolean;
  /** Tools the model may call, and how: they go into the prompt, and calls in the output come back as events. */
  tools?: ToolsRequest;
  /** Thinking on, off or at a level (undefined: the template's default); the thinking comes back as its own events. */
  think?: ThinkSetting;
  /**
   * A prompt longer than the context is cut from the front, a chat's oldest turns first (Ollama's `truncate`, default
   * true); false: CONTEXT_OVERFLOW.
   */
  truncate?: boolean;
  /** When generation fills the context, it shifts (Ollama's `shift`, default true); false: it ends, "length". */
  shift?: boolean;
}

/**
 * One token's log probability, as Ollama and llama-server report it: the log-softmax of the model's raw logits at that
 * position (before temperature and the other samplers). `bytes` are the UTF-8 bytes of `token`.
 */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

/** An output token's log probability with the most likely alternatives at its position (most likely first). */
export interface OutputTokenLogprob extends TokenLogprob {
  topLogprobs: TokenLogprob[];
}

export type DoneReason = "stop" | "length" | "abort";

export interface GenerationStats {
  doneReason: DoneReason;
  /** All durations in nanoseconds, as Ollama reports them. */
  totalDurationNs: number;
  loadDurationNs: number;
  /** The prompt's tokens, all of them (Ollama's prompt_eval_count, OpenAI's prompt_tokens), cached ones included. */
  promptEvalCount: number;
  /** Of those, the ones whose KV cache the sequence already held (a conversation's earlier turns): not evaluated. */
  promptCachedCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
  /** The exchange's token ids, prompt then output (when the request asked for them: returnTokens). */
  tokens?: number[];
  /** Speculative decoding's tally, when it was on: tokens drafted, and of them the ones the model accepted. */
  draft?: { drafted: number; accepted: number };
}

/** Output text; with logprobs asked for, the tokens whose text it completes (a token's text may come out later). */
export type GenerationEvent =
  | { type: "text"; text: string; logprobs?: OutputTokenLogprob[] }
  /** Thinking, separated from the answer (templates with a thinking section). */
  | { type: "thinking"; text: string }
  /** A tool call began (its name is known), then its arguments' JSON text in fragments, then the whole call. */
  | { type: "tool_call_begin"; index: number; name: string }
  | { type: "tool_call_arguments"; index: number; text: string }
  /** `cut`: cut short by the token limit (OpenAI reports it as far as it got; Ollama only whole calls). */
  | { type: "tool_call"; index: number; call: ToolCall; argumentsText: string; cut?: boolean }
  | { type: "done"; stats: GenerationStats };

export interface EmbedRequest {
  model: ModelSpec;
  input: string[];
  /** Truncate inputs longer than the context (default true); false → CONTEXT_OVERFLOW error. */
  truncate: boolean;
  keepAliveMs?: number | null;
  options: SamplingOptions;
  signal: AbortSignal;
}

export interface EmbedResult {
  embeddings: number[][];
  promptEvalCount: number;
  totalDurationNs: number;
  loadDurationNs: number;
}

export interface RerankRequest {
  model: ModelSpec;
  query: string;
  documents: string[];
  keepAliveMs?: number | null;
  options: SamplingOptions;
  signal: AbortSignal;
}

export interface RerankResult {
  /** One relevance score per document, in the documents' order (the rank head's probability, 0 to 1). */
  scores: number[];
  promptEvalCount: number;
  totalDurationNs: number;
  loadDurationNs: number;
}

export interface RunningModel {
  name: string;
  digest: string;
  /** Bytes the loaded model takes: its weights and its KV cache. */
  size: number;
  /** Bytes of `size` in GPU memory (the layers offloaded to the GPU, and their share of the cache); 0 on the CPU. */
  sizeVram: number;
  /** ISO time the model will be unloaded; null = never. */
  expiresAt: string | null;
  contextLength: number;
  /** The KV cache: its element type, flash attention as asked, and its bytes (all sequences). */
  kvCache: { type: KvCacheType; flashAttention: FlashAttention; bytes: number };
  parallel: number;
  busySequences: number;
  queued: number;
  /** Threads of the persistent threadpool attached to the model's context (0 = none). */
  threadpoolThreads: number;
  /** The context samples plain tokens on the JS thread instead of a libuv worker (patched build). */
  inlineSampling: boolean;
  /** Generation steps decode on the JS thread instead of a libuv worker (the patched build). */
  inlineDecode: boolean;
  /** Steps are pipelined (GANTRY_STEP_PIPELINE): a stream's next token decodes while its last one is streamed. */
  stepPipeline: boolean;
  /** Decode steps so far, by where they ran; `pipelined`: those started before their streams had the last tokens. */
  decodeSteps: { inline: number; worker: number; pipelined: number };
}

/** Which node-llama-cpp binary runs inference (reported by /api/version). */
export interface EngineBuildInfo {
  /** patched-local: the threadpool build setup made; prebuilt: the npm package's binary; local: another local build. */
  build: "patched-local" | "prebuilt" | "local";
  /** Contexts attach a persistent ggml threadpool (worker threads survive across decode steps). */
  threadpool: boolean;
  /** Plain token sampling runs on the calling thread, without two thread hand-offs per token. */
  inlineSampling: boolean;
  /** Generation steps decode on the JS thread (the patched build). */
  inlineDecode: boolean;
}

export interface Engine {
  readonly buildInfo: EngineBuildInfo;
  /**
   * Loads the model if needed (for `keep_alive`-only requests and `gantry serve --model`); returns load time in ns (0
   * if
   * already loaded). `options`: the request's options, of which the load options (num_ctx, use_mmap) apply over the
   * model's.
   */
  load(
    model: ModelSpec,
    opts: { keepAliveMs?: number | null; options?: SamplingOptions; signal?: AbortSignal },
  ): Promise<{ loadDurationNs: number }>;
  /**
   * Unloads now (keep_alive 0). Waits for running requests of that model to finish. Returns false if it was not loaded.
   */
  unload(name: string): Promise<boolean>;
  /**
   * Streams generated text. Throws AppError before the first event for: CONTEXT_OVERFLOW (prompt does not fit; message
   * has
   * the token counts), SERVER_BUSY (queue full; Retry-After header), MODEL_LOAD_FAILED, BAD_REQUEST (e.g. invalid
   * schema).
   */
  generate(req: GenerateRequest): AsyncIterable<GenerationEvent>;
  /**
   * Announces a request that is about to generate (called as soon as it is received, before parsing): a generation
   * about to queue its prompt waits briefly for announced requests still on their way, so a burst is prefilled
   * together.
   */
  announce(): Arrival;
  /** How long `generate` waits for announced requests (GANTRY_ARRIVAL_WAIT_MS; 0 = never). */
  readonly arrivalWaitMs: number;
  embed(req: EmbedRequest): Promise<EmbedResult>;
  /**
   * Scores each document's relevance to the query with the model's rank pooling head. UNSUPPORTED_FIELD for a model
   * without one; CONTEXT_OVERFLOW for a pair longer than the context.
   */
  rerank(req: RerankRequest): Promise<RerankResult>;
  /** Token count of a text for a model (loads it if needed). */
  countTokens(model: ModelSpec, text: string): Promise<number>;
  running(): RunningModel[];
  /** True once the named model is loaded and ready. */
  isLoaded(name: string): boolean;
  /** Stops accepting work, aborts queued requests, waits for running ones (up to the deadline), frees models. */
  shutdown(opts?: { deadlineMs?: number }): Promise<void>;
}
