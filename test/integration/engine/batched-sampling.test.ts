// A decode step's rows sampled in one native call, spread over the context's threadpool (NativeContext.sampleTokens,
// through the slot loop's SampleBatch), draw exactly the tokens that one sampleToken call per row draws: each row has
// its own sampler (random state, penalty window, grammar), whichever thread samples it. Checked on the same logits
// against identically configured samplers, and end to end: seeded requests give the same text run together as alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LlamaGrammarEvaluationState, type LlamaContext, type Token } from "node-llama-cpp";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { nativeContextOf } from "../../../server/engine/native/node-llama-cpp.ts";
import type { NativeContext } from "../../../server/engine/native/port.ts";
import { SampleBatch } from "../../../server/engine/sample-batch.ts";
import { resolveSampling } from "../../../server/engine/sampling.ts";
import type { SamplingOptions } from "../../../server/engine/types.ts";
import { TokenSampler } from "../../../server/engine/token-sampler.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { tinyModelPath } from "../../support/models.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

const SEQUENCES = 8;
const WINDOW = 16;

/** Ollama's defaults and variations on them, one per sequence (a greedy one among them). */
const OPTIONS: SamplingOptions[] = [
  { temperature: 0.8, top_k: 40, top_p: 0.9, repeat_penalty: 1.1, seed: 1 },
  { temperature: 0.8, top_k: 40, top_p: 0.9, repeat_penalty: 1.1, seed: 2 },
  { temperature: 1.5, top_k: 100, top_p: 0.95, repeat_penalty: 2, seed: 3 },
  { temperature: 0 },
  { temperature: 1, top_k: 0, min_p: 0.05, seed: 5 },
  { temperature: 0.7, top_k: 40, presence_penalty: 0.5, frequency_penalty: 0.5, seed: 6 },
  { temperature: 1.2, top_k: 20, top_p: 0.8, repeat_penalty: 1.3, seed: 7 },
  { temperature: 0.5, top_k: 40, top_p: 0.9, repeat_penalty: 1.1, seed: 8 },
];

/** Decodes one token run per sequence in one batch; returns each sequence's batch logit index. */
function addStep(native: NativeContext, runs: Token[][], positions: number[]): number[] {
  native.initBatch(runs.reduce((n, r) => n + r.length, 0));
  return runs.map(
    (run, seq) => native.addToBatch(seq, positions[seq]!, Uint32Array.from(run), Uint32Array.of(run.length - 1))[0]!,
  );
}

interface Setup {
  native: NativeContext;
  tokenize(text: string): Token[];
  /** A new evaluation state of a grammar (JSON), for a sampler of its own. */
  grammarState(): LlamaGrammarEvaluationState;
}

async function withContext(fn: (setup: Setup) => Promise<void>) {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  const context: LlamaContext = await model.createContext({ contextSize: 2048, sequences: SEQUENCES, threads: 2 });
  try {
    const native = nativeContextOf(context, model);
    assert.equal(typeof native.sampleTokens, "function", "the patched addon samples a step's rows in one call");
    assert.ok(native.threadpoolThreads >= 2, "the rows are spread over a threadpool");
    const grammar = await llama.createGrammarForJsonSchema({ type: "object", properties: { a: { type: "string" } } });
    await fn({
      native,
      tokenize: (text) => model.tokenize(text) as Token[],
      grammarState: () => new LlamaGrammarEvaluationState({ model, grammar }),
    });
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

test("a step's rows sampled in one call draw the tokens of one sampleToken call per row", async () => {
  await withContext(async ({ native, tokenize, grammarState }) => {
    // The last two rows under a grammar (tool calls, JSON formats): checked on the top k, on every candidate when
    // those fail.
    const make = () =>
      OPTIONS.map((o, i) => {
        const s = resolveSampling({}, { repeat_last_n: WINDOW, ...o });
        return new TokenSampler(native, s, s.seed ?? 0, WINDOW, i >= OPTIONS.length - 2 ? grammarState() : undefined);
      });
    const batched = make();
    const oneByOne = make();
    const histories = OPTIONS.map((_, i) => tokenize(`once upon a time (${i}), once upon a time`));
    let runs = histories.map((h) => [...h]);
    const batch = new SampleBatch(native);
    const drawn: number[][] = OPTIONS.map(() => []);
    try {
      for (let step = 0; step < 24; step++) {
        const rows = addStep(
          native,
          runs,
          histories.map((h, i) => h.length - runs[i]!.length),
        );
        await native.decodeBatch();
        const together = await Promise.all(
          batch.collect(() => rows.map((row, i) => batched[i]!.sample(batch.sampleToken, row, histories[i]!))),
        );
        const alone: number[] = [];
        for (const [i, row] of rows.entries())
          alone.push(await oneByOne[i]!.sample((r, s) => native.sampleToken(r, s), row, histories[i]!));
        assert.deepEqual(together, alone, `step ${step}`);
        together.forEach((t, i) => {
          assert.ok(t >= 0, `step ${step}, row ${i}: a token`);
          drawn[i]!.push(t);
          histories[i]!.push(t as Token);
        });
        runs = together.map((t) => [t as Token]);
      }
    } finally {
      for (const s of [...batched, ...oneByOne]) s.dispose();
    }
    // The rows drew different tokens from one another (a bug mixing up rows or samplers would show).
    assert.ok(new Set(drawn.map((d) => d.join(" "))).size > 4, "the sequences drew different tokens");
  });
});

test("a failed row fails alone, and a sampler given twice samples its rows in order", async () => {
  await withContext(async ({ native, tokenize }) => {
    const prompts = [0, 1, 2].map((i) => tokenize(`the sky is blue (${i})`));
    const rows = addStep(
      native,
      prompts,
      prompts.map(() => 0),
    );
    await native.decodeBatch();
    const config = { temperature: 1, topK: 40, seed: 11, repeatPenalty: 1.5, repeatPenaltyMaxTokens: WINDOW };
    const [a, disposed, twice, reference] = [0, 1, 2, 3].map(() => native.createSampler());
    for (const s of [a!, disposed!, twice!, reference!]) s.applyConfig(config);
    disposed!.dispose();
    try {
      const got = native.sampleTokens!(Uint32Array.from([rows[0]!, rows[1]!, rows[2]!, rows[0]!]), [
        a!,
        disposed!,
        twice!,
        twice!,
      ]);
      assert.ok(got[1] instanceof Error && /disposed/.test(got[1].message), String(got[1]));
      // As two calls, in order: the second one's penalty window holds the first one's token.
      assert.deepEqual(
        [got[2], got[3]],
        [await native.sampleToken(rows[2]!, reference!), await native.sampleToken(rows[0]!, reference!)],
      );
      assert.ok(typeof got[0] === "number" && got[0] >= 0);
    } finally {
      for (const s of [a!, twice!, reference!]) s.dispose();
    }
  });
});

test("seeded and greedy requests give the same text run together (one sampling call per step) as alone", async () => {
  const engine = await makeEngine({ numParallel: SEQUENCES });
  try {
    const model = specFor(await tinyModelPath({ controlLogit: -8 }), "tiny");
    const requests = OPTIONS.map(
      (o, i) => () =>
        collect(engine.generate(request(model, chat(`tell me a story (${i})`), { ...o, num_predict: 24 }))),
    );
    const alone: string[] = [];
    for (const r of requests) alone.push((await r()).text);
    const together = await Promise.all(requests.map((r) => r()));
    assert.deepEqual(
      together.map((c) => c.text),
      alone,
    );
    assert.ok(new Set(alone).size > 4, "the requests drew different text");
  } finally {
    await engine.shutdown();
  }
});
