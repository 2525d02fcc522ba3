// Pure translation between OpenAI wire shapes and the engine's plan/stats.
import { randomBytes } from "node:crypto";
import type {
  ChatMessage,
  DoneReason,
  GenerationStats,
  OutputFormat,
  SamplingOptions,
  ThinkSetting,
  ToolsRequest,
} from "../../engine/types.ts";
import { draftAcceptanceRate } from "../generation.ts";
import { imageFromUrl, type ImageInputConfig } from "../images.ts";
import type { ChatCompletionRequest, CompletionRequest, OpenAIMessage } from "./schemas.ts";

export const newId = (prefix: string): string => `${prefix}-${randomBytes(12).toString("hex")}`;
export const unixNow = (): number => Math.floor(Date.now() / 1000);

/** OpenAI's finish_reason: "tool_calls" when the answer called tools (and was not cut short). */
export function finishReason(r: DoneReason, calledTools = false): "stop" | "length" | "tool_calls" {
  if (r === "length") return "length";
  return calledTools ? "tool_calls" : "stop";
}

/** The request's tools as the engine takes them; none when there are none or tool_choice is "none". */
export function toolsFromOpenAI(r: ChatCompletionRequest): ToolsRequest | undefined {
  const choice = r.tool_choice ?? "auto";
  if (!r.tools?.length || choice === "none") return undefined;
  return {
    tools: r.tools.map((t) => t.function),
    choice: typeof choice === "object" ? { name: choice.function.name } : choice,
    parallel: r.parallel_tool_calls ?? true,
  };
}

/** reasoning_effort (or reasoning.effort) as a think setting: "none" is off, "minimal" the lowest, "xhigh" "max". */
export function thinkFromOpenAI(r: ChatCompletionRequest): ThinkSetting | undefined {
  const effort = r.reasoning_effort ?? r.reasoning?.effort;
  if (effort === undefined) return undefined;
  if (effort === "none") return false;
  return effort === "minimal" ? "low" : effort === "xhigh" ? "max" : effort;
}

/**
 * The usage object. With speculative decoding on, drafted tokens are reported as OpenAI reports predicted outputs'
 * (`completion_tokens_details`: accepted and rejected prediction tokens), plus Gantry's `draft_acceptance_rate`.
 */
export function usage(s: GenerationStats): {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details?: { accepted_prediction_tokens: number; rejected_prediction_tokens: number };
  draft_acceptance_rate?: number;
} {
  return {
    prompt_tokens: s.promptEvalCount,
    completion_tokens: s.evalCount,
    total_tokens: s.promptEvalCount + s.evalCount,
    prompt_tokens_details: { cached_tokens: s.promptCachedCount },
    ...(s.draft
      ? {
          completion_tokens_details: {
            accepted_prediction_tokens: s.draft.accepted,
            rejected_prediction_tokens: s.draft.drafted - s.draft.accepted,
          },
          draft_acceptance_rate: draftAcceptanceRate(s.draft),
        }
      : {}),
  };
}

/** What a message holds besides its content: tool calls, the call a tool result answers (and that call's tool). */
function messageExtras(m: OpenAIMessage, toolNames: ReadonlyMap<string, string>): Partial<ChatMessage> {
  const toolName = m.tool_call_id !== undefined ? (m.name ?? toolNames.get(m.tool_call_id)) : undefined;
  return {
    ...(m.tool_calls?.length
      ? {
          toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        }
      : {}),
    ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
    ...(toolName !== undefined ? { toolName } : {}),
    ...(m.reasoning_content ? { thinking: m.reasoning_content } : {}),
  };
}

/**
 * OpenAI messages → engine chat messages (developer → system; content parts → text + images, fetched if remote; tool
 * calls; a tool result's tool, named by the call it answers).
 */
export async function toChatMessages(messages: OpenAIMessage[], images: ImageInputConfig): Promise<ChatMessage[]> {
  const toolNames = new Map(messages.flatMap((m) => (m.tool_calls ?? []).map((c) => [c.id, c.function.name] as const)));
  return Promise.all(
    messages.map(async (m, i): Promise<ChatMessage> => {
      const role = m.role === "developer" ? "system" : m.role;
      const extras = messageExtras(m, toolNames);
      if (typeof m.content === "string" || m.content == null) return { role, content: m.content ?? "", ...extras };
      const texts: string[] = [];
      const urls: Array<Promise<Uint8Array>> = [];
      const imageFields: string[] = [];
      m.content.forEach((p, j) => {
        if (p.type === "text") {
          texts.push(p.text);
          return;
        }
        const field = `messages.${i}.content.${j}.image_url`;
        imageFields.push(field);
        urls.push(imageFromUrl(typeof p.image_url === "string" ? p.image_url : p.image_url.url, field, images));
      });
      const content = texts.join("\n");
      if (urls.length === 0) return { role, content, ...extras };
      // The engine's errors about an image (no vision projector, undecodable) name its content part.
      return { role, content, images: await Promise.all(urls), imageFields, ...extras };
    }),
  );
}

export function samplingFromOpenAI(r: ChatCompletionRequest | CompletionRequest): SamplingOptions {
  const o: SamplingOptions = {};
  if (r.temperature != null) o.temperature = r.temperature;
  if (r.top_p != null) o.top_p = r.top_p;
  if ("top_k" in r && r.top_k != null) o.top_k = r.top_k;
  if (r.seed != null) o.seed = r.seed;
  if (r.presence_penalty != null) o.presence_penalty = r.presence_penalty;
  if (r.frequency_penalty != null) o.frequency_penalty = r.frequency_penalty;
  if (r.stop != null) o.stop = (Array.isArray(r.stop) ? r.stop : [r.stop]).filter((s) => s.length > 0);
  const max = ("max_completion_tokens" in r ? r.max_completion_tokens : undefined) ?? r.max_tokens;
  if (max != null) o.num_predict = max;
  return o;
}

export function formatFromOpenAI(r: ChatCompletionRequest): OutputFormat | undefined {
  const f = r.response_format;
  if (!f || f.type === "text") return undefined;
  if (f.type === "json_object") return "json";
  return { schema: f.json_schema.schema };
}
