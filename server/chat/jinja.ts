// Renders a GGUF's Jinja chat template (tokenizer.chat_template) as Hugging Face's apply_chat_template does: the
// messages in OpenAI's shape (tool calls with their arguments as objects, tool results with the call's id and the
// tool's name, reasoning_content), `tools`, `add_generation_prompt`, `bos_token`/`eos_token`, and the thinking switches
// templates read (`enable_thinking`, Qwen3's; `reasoning_effort`). Rendered with @huggingface/jinja, the engine
// node-llama-cpp uses for the same templates.
import { createHash } from "node:crypto";
import { Template } from "@huggingface/jinja";
import type { ChatMessage, FunctionTool, ThinkLevel, ThinkSetting } from "./types.ts";

export interface ChatRenderInput {
  messages: ChatMessage[];
  /** Absent or empty: the template gets no `tools`. */
  tools?: FunctionTool[] | undefined;
  think?: ThinkSetting | undefined;
  /** End with the opening of the assistant's turn. */
  addGenerationPrompt: boolean;
  bosToken?: string;
  eosToken?: string;
}

const parsed = new Map<string, Template>();
const MAX_PARSED = 32;

/** The template parsed once per distinct source (bounded). */
function templateOf(source: string): Template {
  let t = parsed.get(source);
  if (t) parsed.delete(source);
  else {
    t = new Template(source);
    if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value!);
  }
  parsed.set(source, t);
  return t;
}

export function renderJinja(source: string, input: ChatRenderInput): string {
  const ids = toolCallIdsFor(source);
  const messages = input.messages.map((m) => jinjaMessage(m, ids));
  return templateOf(source).render({
    messages,
    ...(input.tools?.length ? { tools: input.tools.map(jinjaTool) } : {}),
    add_generation_prompt: input.addGenerationPrompt,
    bos_token: input.bosToken ?? "",
    eos_token: input.eosToken ?? "",
    ...(input.think === undefined ? {} : { enable_thinking: input.think !== false }),
    ...(typeof input.think === "string" ? { reasoning_effort: effortFor(source, input.think) } : {}),
  });
}

/** A template that names no "max" level gets its highest, "high" (Ollama's "max" is where a template takes it). */
const effortFor = (source: string, level: ThinkLevel): ThinkLevel =>
  level === "max" && !/["']max["']/.test(source) ? "high" : level;

/** A tool as templates iterate them: OpenAI's `{type: "function", function: {name, description, parameters}}`. */
export const jinjaTool = (t: FunctionTool) => ({ type: "function", function: t });

/** A message in OpenAI's shape; keys are present only when set (templates test `'tool_calls' in message`). */
function jinjaMessage(m: ChatMessage, id: (id: string) => string): Record<string, unknown> {
  return {
    role: m.role,
    content: m.content,
    ...(m.toolCalls?.length
      ? {
          tool_calls: m.toolCalls.map((c, i) => ({
            id: id(c.id ?? `call${i}`),
            type: "function",
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
    ...(m.toolName !== undefined ? { name: m.toolName } : {}),
    ...(m.toolCallId !== undefined ? { tool_call_id: id(m.toolCallId) } : {}),
    ...(m.thinking ? { reasoning_content: m.thinking } : {}),
  };
}

/**
 * How call ids are spelled for this template. Mistral's templates raise an error unless every id is 9 letters and
 * digits (what Mistral's models write): another id (an OpenAI client's "call_…") becomes 9 characters derived from it,
 * the same for the call and its result.
 */
function toolCallIdsFor(source: string): (id: string) => string {
  if (!source.includes("[TOOL_CALLS]")) return (id) => id;
  return (id) => (/^[a-zA-Z0-9]{9}$/.test(id) ? id : nineAlphanumerics(id));
}

const ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

export function nineAlphanumerics(seed: string): string {
  const bytes = createHash("sha256").update(seed).digest();
  return Array.from(bytes.subarray(0, 9), (b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join("");
}
