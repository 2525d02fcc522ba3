// Reranking like llama-server's /v1/rerank: each (query, document) pair goes through the model's rank pooling head and
// its score is the head's first output (a probability in [0, 1]: a sigmoid where the architecture's head does not
// normalise itself, as node-llama-cpp's LlamaRankingContext). Pairs share decodes, one sequence each (ranker.ts).
// Results are the documents in input order; the HTTP layer sorts them and cuts top_n.
import { AppError } from "../common/errors.ts";
import { contextOverflow } from "./fit-prompt.ts";
import type { LoadedModel } from "./loaded-model.ts";

/** Whether the loaded model has a rank pooling head (a classification head llama.cpp reads under rank pooling). */
export const canRank = (loaded: LoadedModel): boolean => loaded.model.fileInsights.supportsRanking;

export const noRankHead = (name: string): AppError =>
  new AppError("UNSUPPORTED_FIELD", `model "${name}" has no rank pooling head: it cannot rerank`, { param: "model" });

export async function rankDocuments(
  loaded: LoadedModel,
  query: string,
  documents: string[],
): Promise<{ scores: number[]; promptTokens: number }> {
  if (!canRank(loaded)) throw noRankHead(loaded.spec.name);
  const ctx = await loaded.ranking();
  // Each pair must fit the context with a free cell after it, as node-llama-cpp requires.
  let promptTokens = 0;
  for (const doc of documents) {
    const length = ctx.inputLength(query, doc);
    if (length >= loaded.contextLength) throw contextOverflow(length, loaded.contextLength);
    promptTokens += length;
  }
  const scores = await ctx.rankAll(query, documents);
  return { scores, promptTokens };
}
