// A loaded model's reranker: node-llama-cpp's LlamaRankingContext lays each (query, document) pair out, and on the
// patched addon a second rank-pooling context scores many pairs per decode (one sequence each, over one shared KV
// cache); pairs longer than that context, and every pair on the prebuilt addon, are scored one per decode by
// node-llama-cpp. The scores are the same either way (test/integration/engine/rerank-batch.test.ts).
import type { LlamaModel, Token } from "node-llama-cpp";
import { createPairScorer, rankingInput, type PairScorer } from "./native/node-llama-cpp.ts";

/** Cells (and batch tokens) of the batched context: node-llama-cpp's default batch size, llama-server's ubatch. */
export const RANK_BATCH_TOKENS = 512;
/** Pairs per decode at most (the batched context's sequences). */
export const RANK_BATCH_PAIRS = 64;

export interface Ranker {
  /** Tokens the pair (query, document) takes. */
  inputLength(query: string, document: string): number;
  /** Each document's score for the query, in input order. */
  rankAll(query: string, documents: readonly string[]): Promise<number[]>;
  dispose(): Promise<void>;
}

export async function createRanker(model: LlamaModel, opts: { contextSize: number; threads: number }): Promise<Ranker> {
  const single = await model.createRankingContext({ contextSize: opts.contextSize, threads: opts.threads });
  let batched: PairScorer | undefined;
  try {
    const tokens = Math.min(RANK_BATCH_TOKENS, opts.contextSize);
    batched = await createPairScorer(single, { tokens, pairs: RANK_BATCH_PAIRS, threads: opts.threads });
  } catch (e) {
    await single.dispose();
    throw e;
  }
  let queue: Promise<unknown> = Promise.resolve();
  // One batched decode at a time on the context; a request's groups run back to back.
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };
  return {
    inputLength: (query, document) => single.calculateInputLength(query, document),
    async rankAll(query, documents) {
      if (!batched) return single.rankAll(query, [...documents]);
      const scorer = batched;
      const inputs = documents.map((d) => rankingInput(single, query, d));
      const scores = new Array<number>(documents.length).fill(0);
      const long = inputs.flatMap((input, i) => (input.length > scorer.maxTokens ? [i] : []));
      const pending = long.map(async (i) => (scores[i] = await single.rank(query, documents[i]!)));
      for (const group of packPairs(inputs, scorer.maxTokens, scorer.maxPairs)) {
        const got = await serially(() => scorer.score(group.map((i) => inputs[i]!)));
        group.forEach((i, k) => (scores[i] = got[k]!));
      }
      await Promise.all(pending);
      return scores;
    },
    async dispose() {
      await batched?.dispose();
      await single.dispose();
    },
  };
}

/**
 * Groups of pair indexes, in input order, each fitting one decode: at most `maxPairs` pairs of at most `maxTokens`
 * tokens together. Pairs longer than `maxTokens` are left out (scored one per decode); empty ones too (score 0, as
 * node-llama-cpp's).
 */
export function packPairs(inputs: readonly Token[][], maxTokens: number, maxPairs: number): number[][] {
  const groups: number[][] = [];
  let group: number[] = [];
  let tokens = 0;
  inputs.forEach((input, i) => {
    if (input.length === 0 || input.length > maxTokens) return;
    if (group.length === maxPairs || tokens + input.length > maxTokens) {
      groups.push(group);
      group = [];
      tokens = 0;
    }
    group.push(i);
    tokens += input.length;
  });
  if (group.length > 0) groups.push(group);
  return groups;
}
