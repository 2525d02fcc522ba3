// `npm run bench rerank`: documents/s of a 32-document rerank on the tiny reranker (test/support/gguf/reranker.ts),
// one pair per decode (node-llama-cpp's LlamaRankingContext.rankAll: the path before batching) against pairs sharing
// decodes (server/engine/ranker.ts), in process, interleaved rounds; then /v1/rerank over HTTP (gantry serve).
import os from "node:os";
import { silentLogger } from "../../server/common/logger.ts";
import { llamaRuntime } from "../../server/engine/llama-runtime.ts";
import { createRanker } from "../../server/engine/ranker.ts";
import { testEngineBuild } from "../support/engine-build.ts";
import { rerankerModelPath } from "../support/models.ts";
import { createModel, startTestServer } from "../support/server.ts";
import { median } from "./table.ts";

const DOCUMENTS = 32;
const CONTEXT = 2048;
const WORDS = ["sky", "blue", "cat", "dog", "sun", "moon", "water", "red", "hello", "world", "green", "tree"];

export interface RerankRow {
  path: string;
  docsPerSecond: number;
  msPerRequest: number;
}

const documents = Array.from({ length: DOCUMENTS }, (_, i) =>
  Array.from({ length: 4 + (i % 9) }, (_, k) => WORDS[(i * 5 + k * 7) % WORDS.length]).join(" "),
);
const QUERY = "what color is the sky";

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

export async function benchRerank(rounds: number, log: (line: string) => void): Promise<RerankRow[]> {
  const modelPath = await rerankerModelPath();
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath });
  const threads = Math.min(2, os.cpus().length);
  const single = await model.createRankingContext({ contextSize: CONTEXT, threads });
  const ranker = await createRanker(model, { contextSize: CONTEXT, threads });
  const one: number[] = [];
  const batched: number[] = [];
  try {
    await single.rankAll(QUERY, documents);
    await ranker.rankAll(QUERY, documents);
    for (let r = 0; r < rounds; r++) {
      one.push(await timed(() => single.rankAll(QUERY, documents)));
      batched.push(await timed(() => ranker.rankAll(QUERY, documents)));
      log(`round ${r + 1}: one pair per decode ${one.at(-1)!.toFixed(1)} ms, batched ${batched.at(-1)!.toFixed(1)} ms`);
    }
  } finally {
    await ranker.dispose();
    await single.dispose();
    await model.dispose();
  }
  const srv = await startTestServer();
  const http: number[] = [];
  try {
    await createModel(srv.url, "ranker", modelPath);
    const post = () =>
      fetch(`${srv.url}/v1/rerank`, {
        method: "POST",
        body: JSON.stringify({ model: "ranker", query: QUERY, documents }),
      }).then((res) => res.json());
    await post();
    for (let r = 0; r < rounds; r++) http.push(await timed(post));
    log(`HTTP /v1/rerank: ${http.map((ms) => ms.toFixed(1)).join(", ")} ms`);
  } finally {
    await srv.stop();
  }
  const row = (path: string, ms: number[]): RerankRow => ({
    path,
    docsPerSecond: (DOCUMENTS * 1000) / median(ms),
    msPerRequest: median(ms),
  });
  return [
    row("in process, one pair per decode (before)", one),
    row("in process, pairs sharing decodes", batched),
    row("HTTP /v1/rerank, pairs sharing decodes", http),
  ];
}
