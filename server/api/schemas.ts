// Ollama-native wire schemas for generation (/api/generate, /api/chat, /api/embed, /api/embeddings).
// Field names, defaults and meanings follow Ollama's API; these schemas are the single source of the request types.
// Every object is a wire object (wire.ts): a null on any field means the field is absent.
import { z } from "zod";
import { ThinkLevelSchema, ToolArgumentsSchema, ToolListSchema, ToolNameSchema } from "./tools.ts";
import { JsonSchemaObject, optionalText, SeedSchema, wire } from "./wire.ts";

const nonNegInt = z.number().int().min(0);

/** Most tokens a prompt-lookup draft may hold (option draft_ngram). */
export const MAX_NGRAM_DRAFT = 64;

/** Runtime options Ollama accepts in `options` (and Modelfile PARAMETERs). Unknown keys are ignored, as Ollama does. */
export const OptionsSchema = wire(
  z
    .object({
      temperature: z.number().min(0).max(100).optional(),
      top_p: z.number().min(0).max(1).optional(),
      top_k: nonNegInt.optional(),
      min_p: z.number().min(0).max(1).optional(),
      typical_p: z.number().optional(),
      seed: SeedSchema.optional(),
      num_predict: z.number().int().min(-2).optional(),
      /** 0 (a Go client's zero value) is the default. */
      num_ctx: z
        .number()
        .int()
        .min(0)
        .max(1 << 20)
        .optional(),
      num_keep: z.number().int().optional(),
      stop: z.union([z.string(), z.array(z.string())]).optional(),
      repeat_penalty: z.number().min(0).optional(),
      repeat_last_n: z.number().int().min(-1).optional(),
      presence_penalty: z.number().optional(),
      frequency_penalty: z.number().optional(),
      penalize_newline: z.boolean().optional(),
      num_batch: z.number().int().optional(),
      num_gpu: z.number().int().optional(),
      main_gpu: z.number().int().optional(),
      use_mmap: z.boolean().optional(),
      num_thread: z.number().int().optional(),
      numa: z.boolean().optional(),
      /** Gantry's: speculative decoding by prompt lookup, at most this many tokens drafted a step (0 = off). */
      draft_ngram: z.number().int().min(0).max(MAX_NGRAM_DRAFT).optional(),
      /** Gantry's: draft at least this many tokens a step, paying or not (llama-server's speculative.n_min). */
      draft_min: z.number().int().min(0).max(MAX_NGRAM_DRAFT).optional(),
    })
    .loose(),
);
export type Options = z.infer<typeof OptionsSchema>;

export const KeepAliveSchema = z.union([z.string(), z.number()]);

/** "json", "" (none), or a JSON schema object. */
export const FormatSchema = z.union([z.literal("json"), z.literal(""), JsonSchemaObject]);

const base64Image = z.string().min(1);

const modelField = z.string({ error: "model is required" }).trim().min(1, "model is required");

/** Log probabilities of the output tokens (Ollama's `logprobs`, `top_logprobs`). */
const logprobFields = {
  logprobs: z.boolean().optional(),
  top_logprobs: z.number().int().min(0, "must be between 0 and 20").max(20, "must be between 0 and 20").optional(),
};

/**
 * Ollama's `truncate` (a prompt longer than the context is cut from the front, a chat's oldest turns first; false: 400)
 * and `shift` (a full context shifts during generation; false: the answer ends, done_reason "length"). Default true.
 */
const contextFields = { truncate: z.boolean().optional(), shift: z.boolean().optional() };

/** Ollama's `think`: on, off, or a level ("low", "medium", "high"). */
const thinkError = 'invalid think value (must be "high", "medium", "low", "max", true, or false)';
export const ThinkSchema = z.union([z.boolean(), z.enum(ThinkLevelSchema.options, { error: thinkError })], {
  error: thinkError,
});

/** A tool call in an assistant message (Ollama's shape: the arguments are an object). */
export const OllamaToolCallSchema = wire(
  z.object({
    id: z.string().optional(),
    function: wire(
      z.object({
        index: z.number().int().min(0).optional(),
        name: ToolNameSchema,
        arguments: ToolArgumentsSchema.default({}),
      }),
    ),
  }),
);

export const GenerateRequestSchema = wire(
  z.object({
    model: modelField,
    prompt: z.string().optional(),
    suffix: optionalText,
    system: optionalText,
    template: optionalText,
    raw: z.boolean().optional(),
    images: z.array(base64Image).optional(),
    format: FormatSchema.optional(),
    options: OptionsSchema.optional(),
    stream: z.boolean().optional(),
    keep_alive: KeepAliveSchema.optional(),
    context: z.array(z.number().int().min(0, "token ids are not negative")).optional(),
    think: ThinkSchema.optional(),
    ...contextFields,
    ...logprobFields,
  }),
);
export type GenerateRequestBody = z.infer<typeof GenerateRequestSchema>;

/** A chat message. Any role goes to the template as it is (Ollama's rule): system, user, assistant, tool or another. */
export const ChatMessageSchema = wire(
  z.object({
    role: z.string({ error: "role is required" }).min(1, "role is required"),
    content: z.string().default(""),
    images: z.array(base64Image).optional(),
    tool_calls: z.array(OllamaToolCallSchema).optional(),
    /** A tool message's tool (Ollama), and the call it answers. */
    tool_name: z.string().optional(),
    tool_call_id: z.string().optional(),
    thinking: z.string().optional(),
  }),
);
export type ChatMessageBody = z.infer<typeof ChatMessageSchema>;

export const ChatRequestSchema = wire(
  z.object({
    model: modelField,
    messages: z.array(ChatMessageSchema).optional(),
    format: FormatSchema.optional(),
    options: OptionsSchema.optional(),
    stream: z.boolean().optional(),
    keep_alive: KeepAliveSchema.optional(),
    tools: ToolListSchema.optional(),
    think: ThinkSchema.optional(),
    ...contextFields,
    ...logprobFields,
  }),
);
export type ChatRequestBody = z.infer<typeof ChatRequestSchema>;

export const EmbedRequestSchema = wire(
  z.object({
    model: modelField,
    /** Absent (the Go client's nil `any` sends null) or empty: load the model, embed nothing (Ollama). */
    input: z.union([z.string(), z.array(z.string())], { error: "invalid input type" }).default([]),
    truncate: z.boolean().optional(),
    dimensions: z.number().int().min(1).optional(),
    options: OptionsSchema.optional(),
    keep_alive: KeepAliveSchema.optional(),
  }),
);

export const LegacyEmbeddingsRequestSchema = wire(
  z.object({
    model: modelField,
    prompt: z.string(),
    options: OptionsSchema.optional(),
    keep_alive: KeepAliveSchema.optional(),
  }),
);

/** Metrics every final generation object carries (durations in nanoseconds). */
export interface FinalMetrics {
  done_reason: string;
  total_duration: number;
  load_duration: number;
  /** The prompt's tokens, cached ones included (Ollama's meaning). */
  prompt_eval_count: number;
  /** Gantry's: of prompt_eval_count, the tokens found in the sequence's KV cache (not evaluated again). */
  prompt_cached_count: number;
  prompt_eval_duration: number;
  eval_count: number;
  eval_duration: number;
  /**
   * Gantry's, with speculative decoding on: tokens drafted, the drafted tokens the model accepted, and their ratio (0
   * when nothing was drafted).
   */
  draft_count?: number;
  draft_accepted_count?: number;
  draft_acceptance_rate?: number;
}

/** Most documents one rerank request may score (Cohere's limit). */
export const MAX_RERANK_DOCUMENTS = 1000;

/**
 * A rerank request (/api/rerank, /v1/rerank and its aliases): Jina's and Cohere's shape, as llama-server takes it.
 * Documents are strings or Cohere's `{text}` objects; `top_n` keeps the best n; `return_documents` puts each
 * document's text in its result. `keep_alive` and `options` are the native API's, as on /api/embed.
 */
export const RerankRequestSchema = wire(
  z.object({
    model: modelField,
    query: z.string({ error: "query must be a string" }),
    documents: z
      .array(z.union([z.string(), z.object({ text: z.string() }).transform((d) => d.text)]), {
        error: "documents must be a non-empty array of strings",
      })
      .min(1, "documents must be a non-empty array of strings")
      .max(MAX_RERANK_DOCUMENTS, `at most ${MAX_RERANK_DOCUMENTS} documents per request`),
    top_n: z.number().int().min(1).optional(),
    return_documents: z.boolean().optional(),
    options: OptionsSchema.optional(),
    keep_alive: KeepAliveSchema.optional(),
  }),
);
export type RerankRequestBody = z.infer<typeof RerankRequestSchema>;
