// Prompts longer than the context, as Ollama handles them (`truncate`, default on): a chat drops its oldest turns,
// keeping the system messages and at least the last message (server/prompt.go chatPrompt); what is still too long is
// cut from the front at the token level, keeping the first num_keep tokens and leaving half the rest of the context
// free for the answer (llm/llama_server.go completionPromptForRequest). With truncation off the prompt is refused.
// And the context shift when generation reaches the context's end (llama-server's): the same num_keep tokens stay, half
// of what follows them goes. Pure.
import type { Token } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import type { BuiltPrompt } from "./prompt.ts";
import type { ChatMessage, PromptInput } from "./types.ts";

export interface FitOptions {
  /** Cut what does not fit (Ollama's `truncate`, default true); false: CONTEXT_OVERFLOW. */
  truncate: boolean;
  /** Tokens after the BOS that stay at the front (num_keep; -1: the whole prompt). */
  numKeep: number;
  /** The model's BOS token: a prompt that opens with it keeps it beside the num_keep tokens. */
  bos: Token | null;
}

export const contextOverflow = (tokens: number, contextLength: number): AppError =>
  new AppError("CONTEXT_OVERFLOW", `prompt is too long: ${tokens} tokens, context length is ${contextLength}`);

/** Whether `tokens` leave room in the context for at least one token of answer. */
const fits = (n: number, contextLength: number): boolean => n < contextLength;

/** Tokens at the front that truncation and context shifts keep: num_keep after the BOS, bounded by the context. */
export function keptTokens(
  numKeep: number,
  tokens: readonly Token[],
  bos: Token | null,
  contextLength: number,
): number {
  const n = (numKeep < 0 ? tokens.length : numKeep) + (bos !== null && tokens[0] === bos ? 1 : 0);
  return Math.max(0, Math.min(n, contextLength - 1, tokens.length));
}

/**
 * The prompt's tokens cut to the context as llama-server's first context shift would: the first `keep` tokens, then
 * the last ones, so that about half of the context after `keep` stays free for the answer.
 */
export function truncateTokens(tokens: readonly Token[], keep: number, contextLength: number): Token[] {
  const limit = contextLength - Math.max(Math.floor((contextLength - keep) / 2), 1);
  if (tokens.length <= limit) return [...tokens];
  return [...tokens.slice(0, keep), ...tokens.slice(tokens.length - (limit - keep))];
}

/** A chat's messages from `start` on, with the system messages before `start` kept in front (Ollama's rule). */
export function fromTurn(messages: readonly ChatMessage[], start: number): ChatMessage[] {
  return [...messages.slice(0, start).filter((m) => m.role === "system"), ...messages.slice(start)];
}

/**
 * Builds the prompt and fits it to the context: as it is when it fits, else (truncate on) a chat without its oldest
 * turns, then the tokens cut from the front; truncate off: CONTEXT_OVERFLOW with the counts. A prompt with images is
 * never cut here (their positions are counted once encoded, engine.ts checks them).
 */
export function fitPrompt(
  build: (input: PromptInput) => BuiltPrompt,
  input: PromptInput,
  contextLength: number,
  o: FitOptions,
): BuiltPrompt {
  let built = build(input);
  if (built.withImages || fits(built.tokens.length, contextLength)) return built;
  if (!o.truncate) throw contextOverflow(built.tokens.length, contextLength);
  if (input.kind === "chat") {
    for (let start = 1; start < input.messages.length; start++) {
      built = build({ ...input, messages: fromTurn(input.messages, start) });
      if (fits(built.tokens.length, contextLength)) return built;
    }
  }
  const keep = keptTokens(o.numKeep, built.tokens, o.bos, contextLength);
  return { ...built, tokens: truncateTokens(built.tokens, keep, contextLength) };
}

/** An answer's token limit when the context shifts: as Ollama's (llm/server.go), ten contexts at most. */
export const shiftedMaxTokens = (maxTokens: number | undefined, contextLength: number): number =>
  Math.min(maxTokens ?? Infinity, 10 * contextLength);

/** How many tokens a context shift drops after the kept ones: half of the rest, as llama-server (n_discard 0). */
export const shiftDiscard = (held: number, keep: number): number => Math.floor((held - keep) / 2);
