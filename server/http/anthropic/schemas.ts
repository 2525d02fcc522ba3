// The Anthropic Messages API's request bodies (/v1/messages, /v1/messages/count_tokens), as docs.anthropic.com
// describes them and Ollama serves them. What Gantry cannot do is refused with a 400 naming the field (server tools,
// documents, a URL the server may not fetch is refused later), never dropped silently. Every object is a wire object
// (api/wire.ts): a null field is an absent one.
import { z } from "zod";
import { wire } from "../../api/wire.ts";

const CacheControl = { cache_control: z.unknown().optional() };

const TextBlock = z.object({
  type: z.literal("text"),
  text: z.string(),
  citations: z.unknown().optional(),
  ...CacheControl,
});

const ImageSource = wire(
  z.discriminatedUnion("type", [
    z.object({
      type: z.literal("base64"),
      media_type: z.string({ error: "media_type is required (image/jpeg, image/png, image/gif or image/webp)" }),
      data: z.string(),
    }),
    z.object({ type: z.literal("url"), url: z.string() }),
  ]),
);
const ImageBlock = z.object({ type: z.literal("image"), source: ImageSource, ...CacheControl });

/** Anthropic's rule for tool_use ids. */
export const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;

const ToolUseBlock = z.object({
  type: z.literal("tool_use"),
  id: z.string().regex(TOOL_USE_ID, "must match ^[a-zA-Z0-9_-]+$"),
  name: z.string().min(1, "must not be empty"),
  input: z.record(z.string(), z.unknown(), { error: "must be an object (the tool's arguments)" }),
  ...CacheControl,
});

const ToolResultBlock = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1, "must not be empty"),
  content: z.union([z.string(), z.array(wire(z.discriminatedUnion("type", [TextBlock, ImageBlock])))]).optional(),
  is_error: z.boolean().optional(),
  ...CacheControl,
});

const ThinkingBlock = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string().optional() });
const RedactedThinkingBlock = z.object({ type: z.literal("redacted_thinking"), data: z.string() });

export const ContentBlockSchema = wire(
  z.discriminatedUnion("type", [
    TextBlock,
    ImageBlock,
    ToolUseBlock,
    ToolResultBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
  ]),
);
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

export const MessageParamSchema = wire(
  z.object({
    role: z.enum(["user", "assistant"]),
    content: z.union([z.string(), z.array(ContentBlockSchema)]),
  }),
);
export type MessageParam = z.infer<typeof MessageParamSchema>;

const ToolSchema = wire(
  z.object({
    type: z
      .string()
      .optional()
      .refine(
        (t) => t === undefined || t === "custom",
        "only custom tools (name, description, input_schema) are supported",
      ),
    name: z.string().min(1, "must not be empty"),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown(), { error: "input_schema must be a JSON schema object" }),
    ...CacheControl,
  }),
);
export type Tool = z.infer<typeof ToolSchema>;

const ToolChoiceSchema = wire(
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal("tool"), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
    z.object({ type: z.literal("none") }),
  ]),
);
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

const ThinkingSchema = wire(
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1) }),
    z.object({ type: z.literal("disabled") }),
    z.object({ type: z.literal("adaptive") }),
  ]),
);
export type Thinking = z.infer<typeof ThinkingSchema>;

/** Anthropic's newer effort setting: a reasoning effort when `thinking` does not say otherwise. */
const OutputConfigSchema = wire(
  z.object({ effort: z.enum(["low", "medium", "high", "xhigh", "max"]).optional() }).loose(),
);

const SystemSchema = z.union([z.string(), z.array(wire(TextBlock))]);

const model = z.string({ error: "model is required" }).trim().min(1, "model is required");
const messages = z.array(MessageParamSchema).min(1, "messages must contain at least one message");

/** Fields Gantry cannot honour: refused, since dropping them would change what the caller gets. */
const unsupported = (what: string) =>
  z
    .unknown()
    .optional()
    .refine((v) => v === undefined, `${what} is not supported`);

export const MessagesRequestSchema = wire(
  z.object({
    model,
    messages,
    max_tokens: z.number({ error: "max_tokens is required" }).int().min(1),
    system: SystemSchema.optional(),
    stop_sequences: z.array(z.string()).optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    stream: z.boolean().optional(),
    tools: z.array(ToolSchema).optional(),
    tool_choice: ToolChoiceSchema.optional(),
    thinking: ThinkingSchema.optional(),
    output_config: OutputConfigSchema.optional(),
    metadata: wire(z.object({ user_id: z.string().optional() })).optional(),
    service_tier: z.string().optional(),
    container: unsupported("container"),
    mcp_servers: unsupported("mcp_servers"),
  }),
);
export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

export const CountTokensRequestSchema = wire(
  z.object({
    model,
    messages,
    system: SystemSchema.optional(),
    tools: z.array(ToolSchema).optional(),
    tool_choice: ToolChoiceSchema.optional(),
    thinking: ThinkingSchema.optional(),
    output_config: OutputConfigSchema.optional(),
    mcp_servers: unsupported("mcp_servers"),
  }),
);
export type CountTokensRequest = z.infer<typeof CountTokensRequestSchema>;
