// The wire schemas of tool calling and thinking that the Ollama-native and OpenAI-compatible APIs share: a function
// tool (the same `{type: "function", function: {name, description, parameters}}` on both), its name, the checks a
// request's tools get (unique names, parameters an object schema the grammar compiler honours), the thinking levels.
import { z } from "zod";
import { JsonSchemaObject, wire } from "./wire.ts";

/** A tool's name: what the model writes to call it (OpenAI's rule, plus `.` and `:` that MCP servers' names use). */
export const ToolNameSchema = z
  .string()
  .min(1, "a tool's name must not be empty")
  .max(128, "a tool's name is at most 128 characters")
  .regex(/^[A-Za-z0-9_.:-]+$/, "a tool's name may hold only letters, digits, _, -, . and :");

/** A function's `parameters`: a JSON schema of an object (what the model's arguments must match). */
export const ToolParametersSchema = JsonSchemaObject.superRefine((schema, ctx) => {
  const t = schema.type;
  if (t !== undefined && t !== "object" && !(Array.isArray(t) && t.includes("object")))
    ctx.addIssue({ code: "custom", message: `must be a JSON schema of type "object", not ${JSON.stringify(t)}` });
});

export const FunctionToolSchema = wire(
  z.object({
    type: z.literal("function", { error: 'only "function" tools are supported' }),
    function: wire(
      z.object({
        name: ToolNameSchema,
        description: z.string().optional(),
        parameters: ToolParametersSchema.optional(),
        strict: z.boolean().optional(),
      }),
    ),
  }),
);
export type FunctionTool = z.infer<typeof FunctionToolSchema>;

/** A request's `tools`: function tools with distinct names. */
export const ToolListSchema = z.array(FunctionToolSchema).superRefine((tools, ctx) => {
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    if (seen.has(t.function.name))
      ctx.addIssue({
        code: "custom",
        path: [i, "function", "name"],
        message: `another tool is already named "${t.function.name}"`,
      });
    seen.add(t.function.name);
  });
});

/** How much a thinking model may think: Ollama's `think` levels, OpenAI's `reasoning_effort`. */
export const ThinkLevelSchema = z.enum(["low", "medium", "high", "max"]);
export type ThinkLevel = z.infer<typeof ThinkLevelSchema>;

/**
 * OpenAI's `reasoning_effort` (and `reasoning.effort`): "none" turns thinking off, "minimal" is the lowest level,
 * "xhigh" the highest (Ollama's "max").
 */
export const ReasoningEffortSchema = z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]);
export type ReasoningEffort = z.infer<typeof ReasoningEffortSchema>;

/** A tool call's arguments as a client sends them back: a JSON object, or its JSON text. */
export const ToolArgumentsSchema = z.union([z.record(z.string(), z.unknown()), z.string()]).transform((v, ctx) => {
  if (typeof v !== "string") return v;
  if (v.trim() === "") return {};
  try {
    const parsed: unknown = JSON.parse(v);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  ctx.addIssue({ code: "custom", message: "must be a JSON object (or its JSON text)" });
  return z.NEVER;
});
