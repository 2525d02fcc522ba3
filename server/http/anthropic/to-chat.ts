// An Anthropic Messages request as the chat completion it is served on (OpenAI's wire shape, as Ollama's middleware
// turns it into its chat request): system → a system message, tool_use blocks → the assistant's tool_calls,
// tool_result blocks → tool messages (before the rest of their user turn), thinking → reasoning_content and
// reasoning_effort, images → data URLs. The tool_use/tool_result pairing is checked here, as Anthropic checks it.
// Pure; the FieldNames tell the chat completion's errors in the caller's field names.
import { AppError } from "../../common/errors.ts";
import { FieldNames, type ChatTranslation } from "../field-names.ts";
import type { ContentBlock, CountTokensRequest, MessagesRequest, Thinking, Tool, ToolChoice } from "./schemas.ts";

type ChatPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}
interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | ChatPart[];
  tool_call_id?: string;
  tool_calls?: ChatToolCall[];
  reasoning_content?: string;
}

const bad = (param: string, message: string) => new AppError("BAD_REQUEST", `invalid ${param}: ${message}`, { param });

/**
 * Anthropic's `thinking` and `output_config.effort` as a reasoning effort: `enabled` is a level by its token budget
 * (Anthropic's minimum is 1024; under 4k low, under 16k medium, else high), `disabled` none, `adaptive` the effort's
 * level (medium without one); without `thinking`, the effort's level (xhigh and max are the highest, Ollama's "max").
 */
export function reasoningEffort(t: Thinking | undefined, effort?: string): string | undefined {
  const level = effort === undefined ? undefined : effort === "xhigh" || effort === "max" ? "xhigh" : effort;
  if (t === undefined) return level;
  if (t.type === "disabled") return "none";
  if (t.type === "adaptive") return level ?? "medium";
  return t.budget_tokens < 4096 ? "low" : t.budget_tokens < 16_384 ? "medium" : "high";
}

const imageUrl = (b: Extract<ContentBlock, { type: "image" }>): string =>
  b.source.type === "base64" ? `data:${b.source.media_type};base64,${b.source.data}` : b.source.url;

/** Text and image blocks as chat parts, each recorded under its block's name. */
function parts(blocks: ContentBlock[], at: string, chatAt: string, names: FieldNames): ChatPart[] {
  const out: ChatPart[] = [];
  for (const [j, b] of blocks.entries()) {
    if (b.type !== "text" && b.type !== "image") continue;
    names.set(`${chatAt}.content.${out.length}`, `${at}.${j}`);
    if (b.type === "image") names.set(`${chatAt}.content.${out.length}.image_url`, `${at}.${j}.source`);
    out.push(
      b.type === "text" ? { type: "text", text: b.text } : { type: "image_url", image_url: { url: imageUrl(b) } },
    );
  }
  return out;
}

/** Content as the chat takes it: a string when it is text only. */
const compact = (p: ChatPart[]): string | ChatPart[] =>
  p.every((x) => x.type === "text") ? p.map((x) => (x as { text: string }).text).join("\n") : p;

function systemText(system: MessagesRequest["system"]): string | undefined {
  if (system === undefined) return undefined;
  const text = typeof system === "string" ? system : system.map((b) => b.text).join("\n");
  return text === "" ? undefined : text;
}

/** The request's messages as chat messages (system first), checking that tool_results answer the calls before them. */
function chatMessages(req: CountTokensRequest, names: FieldNames): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = systemText(req.system);
  if (system !== undefined) {
    names.set("messages.0", "system");
    out.push({ role: "system", content: system });
  }
  /** The tool_use ids of the assistant turn just before, not yet answered. */
  const open = new Set<string>();
  for (const [i, m] of req.messages.entries()) {
    const at = `messages.${i}`;
    const blocks: ContentBlock[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (typeof m.content === "string") names.set(`messages.${out.length}`, at);
    if (m.role === "user") {
      for (const [j, b] of blocks.entries()) {
        if (b.type !== "tool_result") continue;
        const where = `${at}.content.${j}.tool_use_id`;
        if (!open.has(b.tool_use_id))
          throw bad(
            where,
            `unexpected tool_use_id "${b.tool_use_id}": each tool_result block must answer a tool_use block of the previous (assistant) message`,
          );
        open.delete(b.tool_use_id);
        const k = `messages.${out.length}`;
        names.set(k, `${at}.content.${j}`).set(`${k}.tool_call_id`, where);
        const content =
          typeof b.content === "string"
            ? b.content
            : compact(parts(b.content ?? [], `${at}.content.${j}.content`, k, names));
        out.push({ role: "tool", tool_call_id: b.tool_use_id, content });
      }
      if (open.size > 0)
        throw bad(
          `${at}.content`,
          `tool_use ids without a tool_result block after them: ${[...open].join(", ")}; each tool_use block must be answered by a tool_result block in the next message`,
        );
      const k = `messages.${out.length}`;
      const rest = parts(blocks, `${at}.content`, k, names);
      names.set(k, at);
      if (rest.length > 0 || blocks.length === 0) out.push({ role: "user", content: compact(rest) });
      continue;
    }
    if (open.size > 0) throw bad(at, `tool_use ids without a tool_result block after them: ${[...open].join(", ")}`);
    const k = `messages.${out.length}`;
    const msg: ChatMessage = { role: "assistant", content: "" };
    const texts: string[] = [];
    for (const [j, b] of blocks.entries()) {
      if (b.type === "text") texts.push(b.text);
      else if (b.type === "thinking") msg.reasoning_content = (msg.reasoning_content ?? "") + b.thinking;
      else if (b.type === "tool_use") {
        if (open.has(b.id)) throw bad(`${at}.content.${j}.id`, `tool_use id "${b.id}" is used twice`);
        const t = `${k}.tool_calls.${msg.tool_calls?.length ?? 0}`;
        names
          .set(t, `${at}.content.${j}`)
          .set(`${t}.function.arguments`, `${at}.content.${j}.input`)
          .set(`${t}.function.name`, `${at}.content.${j}.name`);
        open.add(b.id);
        (msg.tool_calls ??= []).push({
          id: b.id,
          type: "function",
          function: { name: b.name, arguments: JSON.stringify(b.input) },
        });
      } else if (b.type === "image" || b.type === "tool_result")
        throw bad(`${at}.content.${j}.type`, `an assistant message cannot hold ${b.type} blocks`);
    }
    names.set(`${k}.content`, `${at}.content`);
    msg.content = texts.join("");
    out.push(msg);
  }
  return out;
}

const chatTool = (t: Tool, i: number, names: FieldNames) => {
  names
    .set(`tools.${i}`, `tools.${i}`)
    .set(`tools.${i}.function.parameters`, `tools.${i}.input_schema`)
    .set(`tools.${i}.function`, `tools.${i}`);
  return {
    type: "function",
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.input_schema,
    },
  };
};

function chatToolChoice(c: ToolChoice | undefined, names: FieldNames): unknown {
  if (c === undefined) return undefined;
  names.set("tool_choice.function.name", "tool_choice.name").set("tool_choice.function", "tool_choice");
  if (c.type === "any") return "required";
  if (c.type === "tool") return { type: "function", function: { name: c.name } };
  return c.type;
}

/** The parts a Messages and a count_tokens request share. */
function common(req: CountTokensRequest, names: FieldNames): Record<string, unknown> {
  names.set("reasoning_effort", req.thinking ? "thinking" : "output_config.effort");
  const effort = reasoningEffort(req.thinking, req.output_config?.effort);
  const parallel =
    req.tool_choice && "disable_parallel_tool_use" in req.tool_choice
      ? req.tool_choice.disable_parallel_tool_use
      : undefined;
  return {
    model: req.model,
    messages: chatMessages(req, names),
    ...(req.tools ? { tools: req.tools.map((t, i) => chatTool(t, i, names)) } : {}),
    ...(req.tool_choice ? { tool_choice: chatToolChoice(req.tool_choice, names) } : {}),
    ...(parallel !== undefined ? { parallel_tool_calls: !parallel } : {}),
    ...(effort !== undefined ? { reasoning_effort: effort } : {}),
    // Anthropic never cuts a prompt: one longer than the context is a 400 "prompt is too long" (and count_tokens counts
    // the whole prompt).
    truncate: false,
  };
}

export function messagesToChat(req: MessagesRequest): ChatTranslation {
  const names = new FieldNames().set("max_completion_tokens", "max_tokens").set("stop", "stop_sequences");
  const stream = req.stream ?? false;
  return {
    names,
    chat: {
      ...common(req, names),
      max_completion_tokens: req.max_tokens,
      ...(req.stop_sequences ? { stop: req.stop_sequences } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.top_p !== undefined ? { top_p: req.top_p } : {}),
      ...(req.top_k !== undefined ? { top_k: req.top_k } : {}),
      ...(req.metadata?.user_id !== undefined ? { user: req.metadata.user_id } : {}),
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    },
  };
}

/**
 * A count_tokens request as a chat completion of one token, not streamed: its prompt is the Messages request's,
 * rendered through the model's template with the tools, and the answer's prompt_tokens are the count.
 */
export function countTokensToChat(req: CountTokensRequest): ChatTranslation {
  const names = new FieldNames();
  return { names, chat: { ...common(req, names), max_completion_tokens: 1, stream: false } };
}
