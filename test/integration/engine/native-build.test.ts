// The inference binary: the patched local build that setup makes (a persistent threadpool per context, inline sampling
// and decoding, the repeat-penalty prefilter, the top k straight from the logits), found and used by the engine.
// Required: these fail, never skip, where it is missing (the prebuilt fallback is tested with the server).
import path from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { patchedBuild } from "../../../server/engine/native/patched-build.ts";
import { addonLacks } from "../../../server/setup/engine-build.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { tinyModelPath } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

test("the patched build is used when setup built it, and every context attaches a threadpool of its thread count", async () => {
  requirePatchedBuild();
  // The build the environment selects (GANTRY_ENGINE_BUILD=source too) has all of the patch, image input included.
  const built = patchedBuild(testEngineBuild());
  assert.deepEqual(addonLacks(path.join(built.buildDir, "Release", "llama-addon.node"), built.cmakeOptions), []);
  const engine = await makeEngine({ threads: 2, numParallel: 2 });
  try {
    assert.deepEqual(engine.buildInfo, {
      build: "patched-local",
      threadpool: true,
      inlineSampling: true,
      inlineDecode: true,
    });
    const model = specFor(await tinyModelPath({ controlLogit: -8 }), "threadpool");
    const results = await Promise.all(
      [0, 1].map((i) => collect(engine.generate(request(model, chat(`hi ${i}`), { num_predict: 6, seed: i })))),
    );
    assert.deepEqual(
      results.map((r) => r.stats.evalCount),
      [6, 6],
    );
    assert.equal(engine.running()[0]!.threadpoolThreads, 2);
  } finally {
    await engine.shutdown();
  }
});

test("a generation step decodes on the JS thread, a prompt step on a worker", async () => {
  requirePatchedBuild();
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "inline-decode");
  const engine = await makeEngine({ threads: 2, numParallel: 2 });
  try {
    assert.equal(engine.buildInfo.inlineDecode, true);
    // Two sequences decoding in the same steps, with a prompt long enough for a worker step first.
    const results = await Promise.all(
      [0, 1].map((i) =>
        collect(
          engine.generate(
            request(model, chat(`tell me a story about the number ${i} `.repeat(4)), {
              num_predict: 24,
              seed: 3 + i,
              temperature: 1,
            }),
          ),
        ),
      ),
    );
    assert.ok(results.every((r) => r.text.length > 0));
    const m = engine.running()[0]!;
    assert.equal(m.inlineDecode, true);
    // The first generation step decodes inline whatever the machine's load (later ones while steps stay quick, which a
    // loaded machine may not allow: slot-loop.test.ts checks that rule); the prompts' step is too large for it.
    assert.ok(m.decodeSteps.inline >= 1 && m.decodeSteps.worker >= 1, JSON.stringify(m.decodeSteps));
  } finally {
    await engine.shutdown();
  }
});

type SamplerProbe = {
  applyConfig(c: object): void;
  getPenaltyPrefilterSize(): number;
  getLeadingTopK(): number;
  dispose(): void;
};
const BASE_CONFIG = { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: 1 };
const PENALTIES = {
  repeatPenaltyTokens: Uint32Array.of(5, 6, 7),
  repeatPenalty: 1.1,
  repeatPenaltyMaxTokens: 64,
  repeatPenaltyPresencePenalty: 0,
  repeatPenaltyFrequencyPenalty: 0,
};

/** Reads `read` off a native sampler configured with `config` (on the tiny model). */
async function probeSampler<T>(read: (s: SamplerProbe) => T): Promise<(config: object) => T> {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  const internal = llama as unknown as { _bindings: { AddonSampler: new (m: unknown) => SamplerProbe } };
  after(() => model.dispose());
  return (config) => {
    const sampler = new internal._bindings.AddonSampler((model as unknown as { _model: unknown })._model);
    try {
      sampler.applyConfig(config);
      return read(sampler);
    } finally {
      sampler.dispose();
    }
  };
}

test("the repeat penalties see only the candidates that can still make the top k", async () => {
  requirePatchedBuild();
  // The rule, on the native sampler: top k + penalty window, only where penalties can only lower logits.
  const sizeFor = await probeSampler((s) => s.getPenaltyPrefilterSize());
  const withPenalties = (config: object): number => sizeFor({ ...BASE_CONFIG, ...PENALTIES, ...config });
  assert.equal(withPenalties({}), 104);
  assert.equal(withPenalties({ temperature: 0 }), 65, "greedy: the top 1 + the window");
  assert.equal(withPenalties({ repeatPenaltyMaxTokens: 16 }), 56);
  assert.equal(withPenalties({ repeatPenalty: 0.9 }), 0, "a penalty below 1 raises negative logits");
  assert.equal(withPenalties({ repeatPenaltyPresencePenalty: -0.5 }), 0);
  assert.equal(withPenalties({ repeatPenaltyFrequencyPenalty: -0.5 }), 0);
  assert.equal(withPenalties({ topK: 0 }), 0, "no top k: every candidate can win");
});

test("a chain that starts with a top k takes it straight from the logits: greedy picks the row's best by the whole vocabulary", async () => {
  requirePatchedBuild();
  // The rule: the chain's first sampler decides k (the penalty prefilter, a top k, or greedy's top 1).
  const leadingFor = await probeSampler((s) => s.getLeadingTopK());
  assert.equal(leadingFor({ ...BASE_CONFIG, ...PENALTIES }), 104, "the penalty prefilter");
  assert.equal(leadingFor(BASE_CONFIG), 40, "top_k first when there are no penalties");
  assert.equal(leadingFor({ ...BASE_CONFIG, temperature: 0 }), 1, "greedy");
  assert.equal(leadingFor({ ...BASE_CONFIG, topK: 0 }), 0, "no top k: the chain needs every candidate");
  assert.equal(
    leadingFor({ ...BASE_CONFIG, ...PENALTIES, repeatPenalty: 0.9 }),
    0,
    "penalties over the whole vocabulary come first",
  );
  // The addon's one setting reaches it through its API only: a wrong value is refused.
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const setSettings = (llama as unknown as { _bindings: { setGantrySettings(s: object): void } })._bindings
    .setGantrySettings;
  assert.throws(() => setSettings({ threadpoolPoll: "high" }), TypeError);
  // Greedy is a leading top 1 (the block scan over the logits): its token has the largest log probability of its
  // position by the logprobs reader, which goes over every candidate; two sequences decoding in the same steps.
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "direct-top-k");
  const engine = await makeEngine({ threads: 2, numParallel: 2 });
  try {
    const runs = await Promise.all(
      [0, 1].map(async (i) => {
        const picked: Array<{ logprob: number; best: number }> = [];
        const req = request(model, chat(`tell me a story ${i}`), {
          num_predict: 32,
          temperature: 0,
          repeat_penalty: 1,
        });
        for await (const ev of engine.generate({ ...req, logprobs: { top: 1 } }))
          if (ev.type === "text")
            for (const lp of ev.logprobs ?? []) picked.push({ logprob: lp.logprob, best: lp.topLogprobs[0]!.logprob });
        return picked;
      }),
    );
    for (const picked of runs) {
      assert.ok(picked.length >= 16, `logprobs of ${picked.length} tokens`);
      for (const p of picked) assert.equal(p.logprob, p.best);
    }
  } finally {
    await engine.shutdown();
  }
});
