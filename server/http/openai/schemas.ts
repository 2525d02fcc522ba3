// OpenAI-compatible request schemas for /v1. Unsupported features are rejected with a clear 400, never ignored silently
// when ignoring would change the answer (n > 1, logprobs, tools with tool_choice "required", …).
import { z } from "zod";

const TextPart = z.object({ type: z.literal("text"), text: z.string() });
const ImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.union([z.string(), z.object({ url: z.string(), detail: z.string().optional() })]),
});
export const ContentPartSchema = z.discriminatedUnion("type", [TextPart, ImagePart]);

export const OpenAIMessageSchema = z.object({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(ContentPartSchema), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  tool_calls: z.array(z.unknown()).optional(),
});
export type OpenAIMessage = z.infer<typeof OpenAIMessageSchema>;

const stopField = z
  .union([z.string(), z.array(z.string()).max(16)])
  .nullable()
  .optional();
const maxTokens = z.number().int().min(1).nullable().optional();

const ResponseFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    json_schema: z.object({
      name: z.string().optional(),
      schema: z.record(z.string(), z.unknown()),
      strict: z.boolean().nullable().optional(),
      description: z.string().optional(),
    }),
  }),
]);

const common = {
  model: z.string({ error: "model is required" }).trim().min(1, "model is required"),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  stop: stopField,
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  n: z.number().int().min(1).max(1, "only n = 1 is supported").nullable().optional(),
  logit_bias: z
    .record(z.string(), z.number())
    .nullable()
    .optional()
    .refine((v) => !v || Object.keys(v).length === 0, "logit_bias is not supported"),
  user: z.string().optional(),
};

export const ChatCompletionRequestSchema = z.object({
  ...common,
  messages: z.array(OpenAIMessageSchema).min(1, "messages must contain at least one message"),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  response_format: ResponseFormatSchema.optional(),
  logprobs: z
    .boolean()
    .nullable()
    .optional()
    .refine((v) => !v, "logprobs is not supported"),
  top_logprobs: z.number().int().nullable().optional(),
  tools: z
    .array(z.unknown())
    .nullable()
    .optional()
    .refine((v) => !v || v.length === 0, "tools are not supported yet"),
  tool_choice: z.unknown().optional(),
  reasoning_effort: z.string().nullable().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

export const CompletionRequestSchema = z.object({
  ...common,
  prompt: z.union([z.string(), z.array(z.string()).length(1, "only a single prompt string is supported")]),
  max_tokens: maxTokens,
  suffix: z.string().nullable().optional(),
  echo: z
    .boolean()
    .nullable()
    .optional()
    .refine((v) => !v, "echo is not supported"),
  best_of: z.number().int().max(1, "best_of > 1 is not supported").nullable().optional(),
  logprobs: z
    .number()
    .int()
    .nullable()
    .optional()
    .refine((v) => v === null || v === undefined, "logprobs is not supported"),
});
export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

export const EmbeddingsRequestSchema = z.object({
  model: common.model,
  input: z.union([z.string(), z.array(z.string()).min(1)], {
    error: "input must be a string or an array of strings (token arrays are not supported)",
  }),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: z.number().int().min(1).optional(),
  user: z.string().optional(),
});
