// OpenAI-compatible request schemas for /v1. Unsupported features are rejected with a clear 400, never ignored silently
// when ignoring would change the answer (n > 1, best_of, echo, logit_bias, …). Every object is a wire object
// (api/wire.ts): a null on any field means the field is absent, as OpenAI's own API treats it.
import { z } from "zod";
import {
  ReasoningEffortSchema,
  ToolArgumentsSchema,
  ToolListSchema,
  ToolNameSchema,
  type FunctionTool,
} from "../../api/tools.ts";
import { JsonSchemaObject, SeedSchema, wire } from "../../api/wire.ts";

const TextPart = z.object({ type: z.literal("text"), text: z.string() });
const ImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.union([z.string(), wire(z.object({ url: z.string(), detail: z.string().optional() }))]),
});
export const ContentPartSchema = wire(z.discriminatedUnion("type", [TextPart, ImagePart]));

/** A tool call of an assistant message sent back: the arguments are the JSON text the model wrote. */
export const OpenAIToolCallSchema = wire(
  z.object({
    id: z.string().min(1, "a tool call's id must not be empty"),
    type: z.literal("function", { error: 'only "function" tool calls are supported' }).default("function"),
    function: wire(z.object({ name: ToolNameSchema, arguments: ToolArgumentsSchema.default({}) })),
  }),
);

export const OpenAIMessageSchema = wire(
  z.object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(ContentPartSchema)]).optional(),
    name: z.string().optional(),
    tool_call_id: z.string().optional(),
    tool_calls: z.array(OpenAIToolCallSchema).optional(),
    /** An assistant message's reasoning, sent back (llama-server's and the common clients' field). */
    reasoning_content: z.string().optional(),
    refusal: z.string().optional(),
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
  seed: SeedSchema.optional(),
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

/** Whether the model may call tools ("auto"), must not ("none"), must call one ("required"), or must call this one. */
export const ToolChoiceSchema = z.union(
  [
    z.enum(["auto", "none", "required"]),
    wire(z.object({ type: z.literal("function"), function: wire(z.object({ name: z.string() })) })),
  ],
  { error: 'must be "auto", "none", "required" or {"type": "function", "function": {"name": …}}' },
);
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

/**
 * Not OpenAI's: Ollama's `truncate` and `shift` (default true, as Ollama's /v1 has them), so that a client can refuse a
 * prompt longer than the context (`truncate: false`: 400 context_length_exceeded) instead of having it cut.
 */
const contextFields = { truncate: z.boolean().optional(), shift: z.boolean().optional() };

export const ChatCompletionRequestSchema = wire(
  z
    .object({
      ...common,
      messages: z.array(OpenAIMessageSchema).min(1, "messages must contain at least one message"),
      max_tokens: maxTokens,
      max_completion_tokens: maxTokens,
      response_format: ResponseFormatSchema.optional(),
      logprobs: z.boolean().optional(),
      top_logprobs: topLogprobs.optional(),
      tools: ToolListSchema.optional(),
      tool_choice: ToolChoiceSchema.optional(),
      parallel_tool_calls: z.boolean().optional(),
      reasoning_effort: ReasoningEffortSchema.optional(),
      reasoning: wire(z.object({ effort: ReasoningEffortSchema.optional() }).loose()).optional(),
      /** Not OpenAI's: llama-server's and vLLM's extension (Anthropic's top_k arrives through it). */
      top_k: z.number().int().min(0).optional(),
      ...contextFields,
    })
    .superRefine((r, ctx) => {
      const problem = toolChoiceProblem(r.tool_choice, r.tools) ?? toolResultProblem(r.messages);
      if (problem) ctx.addIssue({ code: "custom", ...problem });
    }),
);

type Problem = { path: (string | number)[]; message: string };

/** A named function must be one of the tools; "required" needs tools. */
function toolChoiceProblem(choice: ToolChoice | undefined, tools: FunctionTool[] | undefined): Problem | null {
  if (choice === "required" && !tools?.length)
    return { path: ["tool_choice"], message: '"required" needs at least one tool in tools' };
  if (typeof choice !== "object") return null;
  const name = choice.function.name;
  if (tools?.some((t) => t.function.name === name)) return null;
  return { path: ["tool_choice"], message: `no tool in tools is named "${name}"` };
}

/** Each tool message answers a call an earlier assistant message made (its tool_call_id is that call's id). */
function toolResultProblem(messages: OpenAIMessage[]): Problem | null {
  const calls = new Set<string>();
  for (const [i, m] of messages.entries()) {
    for (const call of m.tool_calls ?? []) calls.add(call.id);
    if (m.role !== "tool") continue;
    if (m.tool_call_id === undefined)
      return { path: ["messages", i, "tool_call_id"], message: "a tool message needs the tool_call_id it answers" };
    if (!calls.has(m.tool_call_id))
      return {
        path: ["messages", i, "tool_call_id"],
        message: `"${m.tool_call_id}" is the id of no tool call in an earlier assistant message`,
      };
  }
  return null;
}
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
    ...contextFields,
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
