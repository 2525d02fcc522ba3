// NativeSampler applies its config once and then relies on the native sampler taking each token it samples into the
// repeat-penalty window. Checked against node-llama-cpp's own way (the whole config, window included, before every
// token) on the same logits, step by step, with penalties strong enough that a stale window changes the tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { LlamaContext, Token } from "node-llama-cpp";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { NativeSampler, samplerConfig, type NativeSamplerHandle } from "../../../server/engine/native-sampler.ts";
import { resolveSampling } from "../../../server/engine/sampling.ts";
import type { NativeContext } from "../../../server/engine/step-batcher.ts";
import { tinyModelPath } from "../../support/models.ts";

const WINDOW = 16;

test("sampling with the config applied once draws what applying it before every token draws", async () => {
  const { llama } = await llamaRuntime(2, silentLogger);
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  const context: LlamaContext = await model.createContext({ contextSize: 256, sequences: 1, threads: 2 });
  try {
    const native = (context as unknown as { _ctx: NativeContext })._ctx;
    const AddonSampler = (llama as unknown as { _bindings: { AddonSampler: new (m: unknown) => NativeSamplerHandle } })
      ._bindings.AddonSampler;
    const prompt = model.tokenize("once upon a time, once upon a time, once upon a time") as Token[];
    for (const options of [
      { temperature: 1, seed: 5 },
      { temperature: 0 },
      { temperature: 0.7, seed: 9, presence_penalty: 0.5, frequency_penalty: 0.5 },
    ]) {
      const sampling = resolveSampling({}, { top_k: 40, repeat_penalty: 3, repeat_last_n: WINDOW, ...options });
      const seed = sampling.seed ?? 1;
      const ours = new NativeSampler(model, sampling, seed, WINDOW, undefined);
      const reference = new AddonSampler((model as unknown as { _model: unknown })._model);
      const referenceConfig = samplerConfig(sampling, seed, WINDOW, undefined);
      const history = [...prompt];
      const drawn: number[] = [];
      try {
        native.disposeSequence(0);
        let tokens = prompt;
        for (let step = 0; step < 40; step++) {
          native.initBatch(tokens.length);
          const [row] = native.addToBatch(
            0,
            history.length - tokens.length,
            Uint32Array.from(tokens),
            Uint32Array.of(tokens.length - 1),
          );
          await native.decodeBatch();
          const mine = await ours.sample((i, s) => native.sampleToken(i, s) as Promise<number>, row!, history);
          reference.applyConfig({ ...referenceConfig, repeatPenaltyTokens: Uint32Array.from(history.slice(-WINDOW)) });
          const theirs = await native.sampleToken(row!, reference);
          assert.equal(mine, theirs, `step ${step} of ${JSON.stringify(options)}: ${drawn.join(" ")}`);
          drawn.push(mine);
          history.push(mine as Token);
          tokens = [mine as Token];
        }
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
