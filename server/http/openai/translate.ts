// Pure translation between OpenAI wire shapes and the engine's plan/stats.
import { randomBytes } from "node:crypto";
import type { ChatMessage, DoneReason, GenerationStats, OutputFormat, SamplingOptions } from "../../engine/types.ts";
import { imageFromUrl, type ImageInputConfig } from "../images.ts";
import type { ChatCompletionRequest, CompletionRequest, OpenAIMessage } from "./schemas.ts";

export const newId = (prefix: string): string => `${prefix}-${randomBytes(12).toString("hex")}`;
export const unixNow = (): number => Math.floor(Date.now() / 1000);

export function finishReason(r: DoneReason): "stop" | "length" {
  return r === "length" ? "length" : "stop";
}

export function usage(s: GenerationStats): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  return {
    prompt_tokens: s.promptEvalCount,
    completion_tokens: s.evalCount,
    total_tokens: s.promptEvalCount + s.evalCount,
  };
}

/** OpenAI messages → engine chat messages (developer → system; content parts → text + images, fetched if remote). */
export async function toChatMessages(messages: OpenAIMessage[], images: ImageInputConfig): Promise<ChatMessage[]> {
  return Promise.all(
    messages.map(async (m, i): Promise<ChatMessage> => {
      const role = m.role === "developer" ? "system" : m.role;
      if (typeof m.content === "string" || m.content == null) return { role, content: m.content ?? "" };
      const texts: string[] = [];
      const urls: Array<Promise<Uint8Array>> = [];
      m.content.forEach((p, j) => {
        if (p.type === "text") texts.push(p.text);
        else
          urls.push(
            imageFromUrl(
              typeof p.image_url === "string" ? p.image_url : p.image_url.url,
              `messages.${i}.content.${j}.image_url`,
              images,
            ),
          );
      });
      const content = texts.join("\n");
      return urls.length ? { role, content, images: await Promise.all(urls) } : { role, content };
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
