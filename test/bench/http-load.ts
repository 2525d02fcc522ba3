// Concurrent generation load through the HTTP API of a running `gantry serve`, measured the way a client sees it.
import { postStreamingLines } from "./stream-client.ts";

export interface LoadResult {
  /** Generated tokens over all requests (eval_count as the server reports it). */
  tokens: number;
  /** Wall time from the first request sent to the last response finished. */
  seconds: number;
  /** Time to first streamed text, per request, in ms. */
  ttftMs: number[];
}

export async function runHttpLoad(
  url: string,
  model: string,
  opts: { concurrency: number; maxTokens: number; prompt: string },
): Promise<LoadResult> {
  const t0 = performance.now();
  const one = async (i: number) => {
    const start = performance.now();
    let ttft = Number.NaN,
      tokens = 0;
    const body = {
      model,
      prompt: `${opts.prompt} (${i})`,
      stream: true,
      options: { num_predict: opts.maxTokens, temperature: 0.8, seed: i },
    };
    await postStreamingLines(`${url}/api/generate`, body, (text) => {
      const line = JSON.parse(text) as { response?: string; done?: boolean; eval_count?: number; error?: string };
      if (line.error) throw new Error(line.error);
      if (Number.isNaN(ttft) && line.response) ttft = performance.now() - start;
      if (line.done) tokens = line.eval_count ?? 0;
    });
    return { tokens, ttft };
  };
  const results = await Promise.all(Array.from({ length: opts.concurrency }, (_, i) => one(i)));
  return {
    tokens: results.reduce((s, r) => s + r.tokens, 0),
    seconds: (performance.now() - t0) / 1000,
    ttftMs: results.map((r) => r.ttft),
  };
}
