// TokenSampler applies its config once and then relies on the native sampler taking each token it samples into the
// repeat-penalty window. Checked against node-llama-cpp's own way (the whole config, window included, before every
// token) on the same logits, step by step, with penalties strong enough that a stale window changes the tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { LlamaContext, Token } from "node-llama-cpp";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { nativeContextOf } from "../../../server/engine/native/node-llama-cpp.ts";
import type { NativeContext, SamplerConfig } from "../../../server/engine/native/port.ts";
import { resolveSampling } from "../../../server/engine/sampling.ts";
import { samplerConfig, TokenSampler } from "../../../server/engine/token-sampler.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { benchModelPath, tinyModelPath } from "../../support/models.ts";

const WINDOW = 16;

/** Decodes `tokens` at `position` on sequence 0 and returns the batch logit index of the last one. */
async function decode(native: NativeContext, tokens: Token[], position: number): Promise<number> {
  native.initBatch(tokens.length);
  const [row] = native.addToBatch(0, position, Uint32Array.from(tokens), Uint32Array.of(tokens.length - 1));
  await native.decodeBatch();
  return row!;
}

/**
 * Generates `steps` tokens from `prompt` on sequence 0, each drawn two ways from the same row (`draw` gives both, from
 * the row and the penalty window's history), asserting they agree; returns the tokens drawn.
 */
async function drawBothWays(
  native: NativeContext,
  prompt: Token[],
  steps: number,
  label: string,
  draw: (row: number, history: Token[]) => Promise<[number, number]>,
): Promise<number[]> {
  const history = [...prompt];
  const drawn: number[] = [];
  native.disposeSequence(0);
  let tokens = prompt;
  for (let step = 0; step < steps; step++) {
    const row = await decode(native, tokens, history.length - tokens.length);
    const [mine, theirs] = await draw(row, history);
    assert.equal(mine, theirs, `step ${step} of ${label}: ${drawn.join(" ")}`);
    drawn.push(mine);
    history.push(mine as Token);
    tokens = [mine as Token];
  }
  return drawn;
}

test("sampling with the config applied once draws what applying it before every token draws", async () => {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  const context: LlamaContext = await model.createContext({ contextSize: 256, sequences: 1, threads: 2 });
  try {
    const native = nativeContextOf(context, model);
    const prompt = model.tokenize("once upon a time, once upon a time, once upon a time") as Token[];
    for (const options of [
      { temperature: 1, seed: 5 },
      { temperature: 0 },
      { temperature: 0.7, seed: 9, presence_penalty: 0.5, frequency_penalty: 0.5 },
    ]) {
      const sampling = resolveSampling({}, { top_k: 40, repeat_penalty: 3, repeat_last_n: WINDOW, ...options });
      const seed = sampling.seed ?? 1;
      const ours = new TokenSampler(native, sampling, seed, WINDOW, undefined);
      const reference = native.createSampler();
      const referenceConfig = samplerConfig(sampling, seed, WINDOW, undefined);
      let drawn: number[];
      try {
        drawn = await drawBothWays(native, prompt, 40, JSON.stringify(options), async (row, history) => {
          const mine = await ours.sample((i, s) => native.sampleToken(i, s), row, history);
          reference.applyConfig({ ...referenceConfig, repeatPenaltyTokens: Uint32Array.from(history.slice(-WINDOW)) });
          return [mine, await native.sampleToken(row, reference)];
        });
      } finally {
        ours.dispose();
        reference.dispose();
      }
      assert.ok(new Set(drawn).size > 1, "the penalties moved the choice between tokens");
    }
  } finally {
    await context.dispose();
    await model.dispose();
  }
});

test("the top k taken straight from the logits draws what the top k over every candidate draws", async () => {
  // A chain that starts with a top k gets it from the patch's scan over the logits (block maxima, then the blocks that
  // can hold the top k); a logit bias, here of 0 (no change), sends a chain over the whole-vocabulary candidate array
  // instead. With one seed, the same candidates in the same order draw the same tokens. On Llama-3's 128k vocabulary
  // (2004 blocks of 64 logits) and the tiny model's byte-level one (fewer blocks than k: every logit a candidate).
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  for (const modelPath of [await benchModelPath("step"), await tinyModelPath({ controlLogit: -8 })]) {
    const model = await llama.loadModel({ modelPath });
    const context: LlamaContext = await model.createContext({ contextSize: 256, sequences: 1, threads: 2 });
    try {
      const native = nativeContextOf(context, model);
      const prompt = model.tokenize("once upon a time, there was a ship") as Token[];
      for (const options of [
        { temperature: 0.8, top_k: 40, top_p: 0.9, repeat_penalty: 1.1, seed: 3 },
        { temperature: 0 },
        { temperature: 1.5, top_k: 300, top_p: 1, repeat_penalty: 1, seed: 4 },
      ]) {
        const sampling = resolveSampling({}, { repeat_last_n: WINDOW, ...options });
        const config = samplerConfig(sampling, sampling.seed ?? 1, WINDOW, undefined);
        const direct = native.createSampler();
        const whole = native.createSampler();
        const unbiased = { tokenBiasKeys: Uint32Array.of(0), tokenBiasValues: Float32Array.of(0) };
        let drawn: number[];
        try {
          drawn = await drawBothWays(native, prompt, 16, JSON.stringify(options), async (row, history) => {
            const window = { repeatPenaltyTokens: Uint32Array.from(history.slice(-WINDOW)) };
            direct.applyConfig({ ...config, ...window });
            whole.applyConfig({ ...config, ...window, ...unbiased } as SamplerConfig);
            return [await native.sampleToken(row, direct), await native.sampleToken(row, whole)];
          });
        } finally {
          direct.dispose();
          whole.dispose();
        }
        if (options.temperature > 0) assert.ok(new Set(drawn).size > 1, `${JSON.stringify(options)} drew one token`);
      }
    } finally {
      await context.dispose();
      await model.dispose();
    }
  }
});

test("log probabilities are the log-softmax of the raw logits, whatever the sampler's temperature (as Ollama's)", async () => {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  const context: LlamaContext = await model.createContext({ contextSize: 256, sequences: 1, threads: 2 });
  const native = nativeContextOf(context, model);
  // The reference, read past the port from the addon itself: every logit of the row (a greedy chain leaves them raw),
  // log-softmax in double precision.
  const addon = (
    context as unknown as { _ctx: { sampleToken(...a: unknown[]): Promise<[number, unknown, unknown, number[]]> } }
  )._ctx;
  const AddonSampler = (
    llama as unknown as {
      _bindings: { AddonSampler: new (m: unknown) => { applyConfig(c: object): void; dispose(): void } };
    }
  )._bindings.AddonSampler;
  const everyLogit = new AddonSampler((model as unknown as { _model: unknown })._model);
  everyLogit.applyConfig({});
  try {
    const prompt = model.tokenize("the sky is blue and the sun") as Token[];
    for (const options of [{ temperature: 1.5, seed: 3 }, { temperature: 0.2, seed: 4 }, { temperature: 0 }]) {
      const sampling = resolveSampling({}, { top_k: 40, ...options });
      const sampler = new TokenSampler(native, sampling, sampling.seed ?? 1, 64, undefined, 5);
      const history = [...prompt];
      try {
        native.disposeSequence(0);
        let tokens = prompt;
        for (let step = 0; step < 8; step++) {
          const row = await decode(native, tokens, history.length - tokens.length);
          const token = await sampler.sampleWithLogprobs(
            (i, sm) => native.sampleToken(i, sm),
            (i, sm, t, top) => native.tokenLogits(i, sm, t, top),
            row,
            history,
          );
          const got = sampler.takeLogprobs()!;
          const [, , , all] = await addon.sampleToken(row, everyLogit, false, false, true);
          const logits = new Map<number, number>();
          for (let i = 0; i < all.length; i += 2) logits.set(all[i]!, all[i + 1]!);
          const max = Math.max(...logits.values());
          const logZ = max + Math.log([...logits.values()].reduce((s, l) => s + Math.exp(l - max), 0));
          const ranked = [...logits.entries()].sort((a, b) => b[1] - a[1]);
          const where = `step ${step} of ${JSON.stringify(options)}`;
          assert.equal(got.token, token);
          assert.ok(Math.abs(got.logprob - (logits.get(token)! - logZ)) < 1e-4, `${where}: sampled token`);
          assert.deepEqual(
            got.top.map((t) => t.token),
            ranked.slice(0, 5).map(([t]) => t),
            `${where}: top 5`,
          );
          got.top.forEach((t, i) =>
            assert.ok(Math.abs(t.logprob - (ranked[i]![1] - logZ)) < 1e-4, `${where}: top ${i}`),
          );
          history.push(token as Token);
          tokens = [token as Token];
        }
      } finally {
        sampler.dispose();
      }
    }
  } finally {
    everyLogit.dispose();
    await context.dispose();
    await model.dispose();
  }
});
