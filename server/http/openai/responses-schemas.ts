// The OpenAI Responses API's request body (/v1/responses), stateless as Ollama serves it: the whole conversation comes
// in `input` (messages, function calls and their outputs, reasoning). What needs stored state (previous_response_id,
// conversation, item_reference, file ids), background runs and tools other than functions are refused with a 400
// naming the field. Every object is a wire object (api/wire.ts): a null field is an absent one.
import { z } from "zod";
import { JsonSchemaObject, wire } from "../../api/wire.ts";
import { ReasoningEffortSchema } from "../../api/tools.ts";

const STATELESS = "Gantry does not store responses: send the whole conversation in input";

const refused = (message: string) =>
  z
    .unknown()
    .optional()
    .refine((v) => v === undefined, message);

const InputText = z.object({ type: z.literal("input_text"), text: z.string() });
const OutputText = z.object({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.unknown().optional(),
  logprobs: z.unknown().optional(),
});
const Refusal = z.object({ type: z.literal("refusal"), refusal: z.string() });
const InputImage = z.object({
  type: z.literal("input_image"),
  image_url: z.string({ error: "image_url is required (a data:image/...;base64 URL or an http(s) URL)" }),
  detail: z.string().optional(),
  file_id: refused(`not supported (${STATELESS}); send image_url`),
});
const InputFile = z
  .object({ type: z.literal("input_file") })
  .refine(() => false, "input_file is not supported; send the text as input_text");

export const ResponsesContentSchema = wire(
  z.discriminatedUnion("type", [InputText, OutputText, Refusal, InputImage, InputFile]),
);
export type ResponsesContent = z.infer<typeof ResponsesContentSchema>;

const content = z.union([z.string(), z.array(ResponsesContentSchema)]);

const MessageItem = z.object({
  type: z.literal("message"),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content,
  id: z.string().optional(),
  status: z.string().optional(),
});

const FunctionCallItem = z.object({
  type: z.literal("function_call"),
  call_id: z.string().min(1, "must not be empty"),
  name: z.string().min(1, "must not be empty"),
  arguments: z.string(),
  id: z.string().optional(),
  status: z.string().optional(),
});

const FunctionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1, "must not be empty"),
  output: content,
  id: z.string().optional(),
  status: z.string().optional(),
});

const ReasoningItem = z.object({
  type: z.literal("reasoning"),
  id: z.string().optional(),
  summary: z.array(wire(z.object({ type: z.string(), text: z.string() }))).optional(),
  content: z.array(wire(z.object({ type: z.string(), text: z.string() }))).optional(),
  encrypted_content: z.string().optional(),
  status: z.string().optional(),
});

const ItemReference = z
  .object({ type: z.literal("item_reference"), id: z.string() })
  .refine(() => false, `item_reference is not supported (${STATELESS}, the item itself)`);

/** An input item; one with a role and no type is a message (the shorthand `{role, content}`). */
export const ResponsesItemSchema = z.preprocess(
  (v) =>
    v !== null && typeof v === "object" && !("type" in v && (v as { type: unknown }).type != null) && "role" in v
      ? { ...v, type: "message" }
      : v,
  wire(
    z.discriminatedUnion("type", [MessageItem, FunctionCallItem, FunctionCallOutputItem, ReasoningItem, ItemReference]),
  ),
);
export type ResponsesItem = z.infer<typeof ResponsesItemSchema>;

const FunctionTool = wire(
  z.object({
    type: z.literal("function", { error: "only function tools are supported" }),
    name: z.string().min(1, "must not be empty"),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().optional(),
  }),
);
export type ResponsesTool = z.infer<typeof FunctionTool>;

const ToolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  wire(z.object({ type: z.literal("function"), name: z.string().min(1) })),
]);

const TextFormat = wire(
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("text") }),
    z.object({ type: z.literal("json_object") }),
    z.object({
      type: z.literal("json_schema"),
      name: z.string().optional(),
      schema: JsonSchemaObject,
      strict: z.boolean().optional(),
      description: z.string().optional(),
    }),
  ]),
);

export const ResponsesRequestSchema = wire(
  z.object({
    model: z.string({ error: "model is required" }).trim().min(1, "model is required"),
    input: z.union([z.string(), z.array(ResponsesItemSchema).min(1, "input must contain at least one item")], {
      error: "must be a string or a list of items",
    }),
    instructions: z.string().optional(),
    tools: z.array(FunctionTool).optional(),
    tool_choice: ToolChoice.optional(),
    parallel_tool_calls: z.boolean().optional(),
    max_output_tokens: z.number().int().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    text: wire(z.object({ format: TextFormat.optional(), verbosity: z.string().optional() })).optional(),
    reasoning: wire(
      z.object({
        effort: ReasoningEffortSchema.optional(),
        summary: z.string().optional(),
        generate_summary: z.string().optional(),
      }),
    ).optional(),
    stream: z.boolean().optional(),
    store: z.boolean().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    truncation: z.enum(["auto", "disabled"]).optional(),
    user: z.string().optional(),
    previous_response_id: refused(`not supported (${STATELESS})`),
    conversation: refused(`not supported (${STATELESS})`),
    prompt: refused("stored prompt templates are not supported: send instructions and input"),
    background: z
      .boolean()
      .optional()
      .refine((v) => !v, "background responses are not supported (Gantry does not store responses)"),
  }),
);
export type ResponsesRequest = z.infer<typeof ResponsesRequestSchema>;
