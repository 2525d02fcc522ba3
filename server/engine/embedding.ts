// Embeddings like Ollama's /api/embed: one vector per input, L2-normalised; inputs longer than the context are
// truncated, or refused with CONTEXT_OVERFLOW when truncation is off.
import type { Token } from "node-llama-cpp";
import { contextOverflow } from "./generation.ts";
import type { LoadedModel } from "./loaded-model.ts";

export function l2Normalize(v: readonly number[]): number[] {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm === 0 ? [...v] : v.map((x) => x / norm);
}

export async function embedTexts(loaded: LoadedModel, inputs: string[], truncate: boolean): Promise<{ embeddings: number[][]; promptTokens: number }> {
  const limit = loaded.contextLength;
  const tokenized: Token[][] = inputs.map((text) => {
    const tokens = loaded.model.tokenize(text, true);
    if (tokens.length <= limit) return tokens;
    if (!truncate) throw contextOverflow(tokens.length, limit);
    return tokens.slice(0, limit);
  });
  const ctx = await loaded.embeddings();
  const embeddings: number[][] = [];
  for (const tokens of tokenized) embeddings.push(l2Normalize((await ctx.getEmbeddingFor(tokens)).vector));
  return { embeddings, promptTokens: tokenized.reduce((n, t) => n + t.length, 0) };
}
