// OpenAI-compatible request schemas for /v1. Unsupported features are rejected with a clear 400, never ignored silently
// when ignoring would change the answer (n > 1, best_of, echo, logit_bias, …). Every object is a wire object
// (api/wire.ts): a null on any field means the field is absent, as OpenAI's own API treats it.
import { z } from "zod";
import { JsonSchemaObject, wire } from "../../api/wire.ts";

const TextPart = z.object({ type: z.literal("text"), text: z.string() });
const ImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.union([z.string(), wire(z.object({ url: z.string(), detail: z.string().optional() }))]),
});
export const ContentPartSchema = wire(z.discriminatedUnion("type", [TextPart, ImagePart]));

export const OpenAIMessageSchema = wire(
  z.object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(ContentPartSchema)]).optional(),
    name: z.string().optional(),
    tool_call_id: z.string().optional(),
    tool_calls: z.array(z.unknown()).optional(),
  }),
);
export type OpenAIMessage = z.infer<typeof OpenAIMessageSchema>;

const stopField = z.union([z.string(), z.array(z.string()).max(16)]).optional();
const maxTokens = z.number().int().min(1).optional();
/** OpenAI allows 0–20 most likely alternatives per position. */
const topLogprobs = z.number().int().min(0, "must be between 0 and 20").max(20, "must be between 0 and 20");

const ResponseFormatSchema = wire(
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("text") }),
    z.object({ type: z.literal("json_object") }),
    z.object({
      type: z.literal("json_schema"),
      json_schema: wire(
        z.object({
          name: z.string().optional(),
          schema: JsonSchemaObject,
          strict: z.boolean().optional(),
          description: z.string().optional(),
        }),
      ),
    }),
  ]),
);

const common = {
  model: z.string({ error: "model is required" }).trim().min(1, "model is required"),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  seed: z.number().int().optional(),
  stop: stopField,
  stream: z.boolean().optional(),
  stream_options: wire(z.object({ include_usage: z.boolean().optional() })).optional(),
  presence_penalty: z.number().min(-2).max(2).optional(),
  frequency_penalty: z.number().min(-2).max(2).optional(),
  n: z.number().int().min(1).max(1, "only n = 1 is supported").optional(),
  logit_bias: z
    .record(z.string(), z.number())
    .optional()
    .refine((v) => !v || Object.keys(v).length === 0, "logit_bias is not supported"),
  user: z.string().optional(),
};

export const ChatCompletionRequestSchema = wire(
  z.object({
    ...common,
    messages: z.array(OpenAIMessageSchema).min(1, "messages must contain at least one message"),
    max_tokens: maxTokens,
    max_completion_tokens: maxTokens,
    response_format: ResponseFormatSchema.optional(),
    logprobs: z.boolean().optional(),
    top_logprobs: topLogprobs.optional(),
    tools: z.array(z.unknown()).optional(),
    tool_choice: z.unknown().optional(),
    reasoning_effort: z.string().optional(),
    /** Not OpenAI's: llama-server's and vLLM's extension (Anthropic's top_k arrives through it). */
    top_k: z.number().int().min(0).optional(),
  }),
);
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

export const CompletionRequestSchema = wire(
  z.object({
    ...common,
    prompt: z.union([z.string(), z.array(z.string()).length(1, "only a single prompt string is supported")]),
    max_tokens: maxTokens,
    suffix: z.string().optional(),
    echo: z
      .boolean()
      .optional()
      .refine((v) => !v, "echo is not supported"),
    best_of: z.number().int().max(1, "best_of > 1 is not supported").optional(),
    /** The legacy completions API's logprobs: how many most likely alternatives to return per position. */
    logprobs: topLogprobs.optional(),
  }),
);
export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

export const EmbeddingsRequestSchema = wire(
  z.object({
    model: common.model,
    input: z.union([z.string(), z.array(z.string()).min(1)], {
      error: "input must be a string or an array of strings (token arrays are not supported)",
    }),
    encoding_format: z.enum(["float", "base64"]).optional(),
    dimensions: z.number().int().min(1).optional(),
    user: z.string().optional(),
  }),
);
