// Embeddings like Ollama's /api/embed: one vector per input, L2-normalised; inputs longer than the context are
// truncated, or refused with CONTEXT_OVERFLOW when truncation is off (with Ollama's texts, which clients match on).
import type { Token } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import type { LoadedModel } from "./loaded-model.ts";

export function l2Normalize(v: readonly number[]): number[] {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm === 0 ? [...v] : v.map((x) => x / norm);
}

export async function embedTexts(
  loaded: LoadedModel,
  inputs: string[],
  truncate: boolean,
): Promise<{ embeddings: number[][]; promptTokens: number }> {
  const ctx = await loaded.embeddings();
  // node-llama-cpp adds BOS/EOS as the vocabulary wants and needs one free slot after the input.
  const fit = (tokens: Token[]): Token[] => {
    const total = ctx.calculateInputLength(tokens);
    if (total < loaded.contextLength) return tokens;
    if (!truncate)
      throw new AppError(
        "CONTEXT_OVERFLOW",
        `the input length exceeds the context length: ${total} tokens, context length is ${loaded.contextLength}`,
      );
    const keep = tokens.length - (total - loaded.contextLength + 1);
    if (keep <= 0) throw new AppError("CONTEXT_OVERFLOW", "input after truncation exceeds maximum context length");
    return tokens.slice(0, keep);
  };
  // An empty text is embedded as the model's beginning (or end) token alone, as llama.cpp's server does: a vector of
  // the model's size, never a zero-length one.
  const nothing = loaded.model.tokens.bos ?? loaded.model.tokens.eos;
  const tokensOf = (text: string): Token[] => {
    const tokens = loaded.model.tokenize(text, false);
    return tokens.length === 0 && nothing !== null ? [nothing] : tokens;
  };
  const prepared = inputs.map((text) => fit(tokensOf(text)));
  const embeddings: number[][] = [];
  let promptTokens = 0;
  for (const tokens of prepared) {
    promptTokens += ctx.calculateInputLength(tokens);
    embeddings.push(l2Normalize((await ctx.getEmbeddingFor(tokens)).vector));
  }
  return { embeddings, promptTokens };
}
