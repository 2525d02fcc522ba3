// Output token log probabilities in each API's wire shape. Pure.
import type { OutputTokenLogprob, TokenLogprob } from "../engine/types.ts";

/** What a request asked for: none, or log probabilities with `top` alternatives per position (0–20). */
export type LogprobsRequest = { top: number } | undefined;

export const logprobsRequest = (asked: boolean | undefined, top: number | undefined): LogprobsRequest =>
  asked ? { top: top ?? 0 } : undefined;

interface WireTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

const wireToken = (t: TokenLogprob): WireTokenLogprob => ({ token: t.token, logprob: t.logprob, bytes: t.bytes });

/** Ollama's `logprobs` (/api/generate, /api/chat): `top_logprobs` only when alternatives were asked for. */
export function ollamaLogprobs(
  lps: readonly OutputTokenLogprob[],
  top: number,
): Array<WireTokenLogprob & { top_logprobs?: WireTokenLogprob[] }> {
  return lps.map((t) => (top > 0 ? { ...wireToken(t), top_logprobs: t.topLogprobs.map(wireToken) } : wireToken(t)));
}

/** OpenAI chat completions' `choices[].logprobs`. */
export function openaiChatLogprobs(lps: readonly OutputTokenLogprob[]): {
  content: Array<WireTokenLogprob & { top_logprobs: WireTokenLogprob[] }>;
  refusal: null;
} {
  return { content: lps.map((t) => ({ ...wireToken(t), top_logprobs: t.topLogprobs.map(wireToken) })), refusal: null };
}

/** OpenAI (legacy) completions' `choices[].logprobs`; `offset` is where this text starts in the whole completion. */
export function openaiCompletionLogprobs(
  lps: readonly OutputTokenLogprob[],
  offset: number,
): { tokens: string[]; token_logprobs: number[]; top_logprobs: Array<Record<string, number>>; text_offset: number[] } {
  const text_offset: number[] = [];
  let at = offset;
  for (const t of lps) {
    text_offset.push(at);
    at += t.token.length;
  }
  return {
    tokens: lps.map((t) => t.token),
    token_logprobs: lps.map((t) => t.logprob),
    top_logprobs: lps.map((t) => Object.fromEntries(t.topLogprobs.map((a) => [a.token, a.logprob]))),
    text_offset,
  };
}
