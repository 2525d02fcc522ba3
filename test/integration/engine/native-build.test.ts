// The inference binary: the patched local build that setup makes (a persistent threadpool per context, inline sampling
// and decoding, the repeat-penalty prefilter), found and used by the engine. Required: these fail, never skip, where it
// is missing (the prebuilt fallback is tested with the server).
import path from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { silentLogger } from "../../../server/common/logger.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { applyAddonSettings } from "../../../server/engine/native/node-llama-cpp.ts";
import { patchedBuild } from "../../../server/engine/native/patched-build.ts";
import { addonLacks } from "../../../server/setup/engine-build.ts";
import type { EngineTuning } from "../../../server/engine/tuning.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { tinyModelPath } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

type AddonSwitch = keyof NonNullable<EngineTuning["addon"]>;

/**
 * Runs `fn` with one of the addon's switches set (it reads them when it builds a context or a sampler chain), on the
 * runtime the sampler probes use.
 */
async function withAddonSwitch<T>(name: AddonSwitch, on: boolean, fn: () => Promise<T>): Promise<T> {
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  assert.equal(applyAddonSettings(llama, { [name]: on, threadpoolPoll: 50 }), true, "the addon takes its settings");
  try {
    return await fn();
  } finally {
    applyAddonSettings(llama, { threadpoolPoll: 50 });
  }
}

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

test("the threadpool switch reaches the contexts created after it (the benchmark's threadpool-off run)", async () => {
  requirePatchedBuild();
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "threadpool-off");
  const engine = await makeEngine({ threads: 2, numParallel: 1, tuning: { addon: { threadpool: false } } });
  try {
    assert.equal(engine.buildInfo.threadpool, false);
    const r = await collect(engine.generate(request(model, chat("hi"), { num_predict: 4, seed: 1 })));
    assert.equal(r.stats.evalCount, 4);
    assert.equal(engine.running()[0]!.threadpoolThreads, 0);
  } finally {
    await engine.shutdown();
  }
});

test("inline sampling draws the same tokens as sampling on libuv workers, and the switch reaches the context", async () => {
  requirePatchedBuild();
  // The addon reads the switch when a context is created: one engine per setting, same process.
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "inline");
  const outputs: Record<string, string[]> = {};
  for (const setting of ["0", "1"]) {
    outputs[setting] = await (async () => {
      const engine = await makeEngine({
        threads: 2,
        numParallel: 2,
        tuning: { addon: { inlineSampling: setting === "1" } },
      });
      try {
        // Temperature sampling with penalties (the whole plain chain), two sequences decoding in the same steps.
        const results = await Promise.all(
          [0, 1].map((i) =>
            collect(
              engine.generate(
                request(model, chat(`story ${i}`), {
                  num_predict: 24,
                  seed: 7 + i,
                  temperature: 1,
                  repeat_penalty: 1.3,
                }),
              ),
            ),
          ),
        );
        assert.equal(engine.running()[0]!.inlineSampling, setting === "1");
        return results.map((r) => r.text);
      } finally {
        await engine.shutdown();
      }
    })();
  }
  assert.ok(outputs["1"]!.every((t) => t.length > 0));
  assert.deepEqual(outputs["1"], outputs["0"]);
});

test("inline decoding generates the same tokens as decoding on libuv workers, and generation steps do decode inline", async () => {
  requirePatchedBuild();
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "inline-decode");
  const outputs: Record<string, string[]> = {};
  for (const inlineDecode of [false, true]) {
    // Steps stay inline however slow a loaded machine makes them (the switch back to workers is not under test).
    const engine = await makeEngine({
      threads: 2,
      numParallel: 2,
      tuning: { inlineDecode, inlineDecodeMaxStepMs: 60_000 },
    });
    try {
      assert.equal(engine.buildInfo.inlineDecode, inlineDecode);
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
      outputs[String(inlineDecode)] = results.map((r) => r.text);
      const m = engine.running()[0]!;
      assert.equal(m.inlineDecode, inlineDecode);
      if (inlineDecode)
        assert.ok(m.decodeSteps.inline >= 20 && m.decodeSteps.worker >= 1, JSON.stringify(m.decodeSteps));
      else assert.equal(m.decodeSteps.inline, 0);
    } finally {
      await engine.shutdown();
    }
  }
  assert.ok(outputs.true!.every((t) => t.length > 0));
  assert.deepEqual(outputs.true, outputs.false);
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

/** Each run's text with the addon switch `name` off ("0") and on ("1"), on one engine per setting. */
async function outputsOffAndOn(
  name: AddonSwitch,
  tag: string,
  runs: Array<Record<string, unknown>>,
): Promise<Record<string, string[]>> {
  const spec = specFor(await tinyModelPath({ controlLogit: -8 }), tag);
  const outputs: Record<string, string[]> = {};
  for (const setting of ["0", "1"]) {
    outputs[setting] = await (async () => {
      const engine = await makeEngine({
        threads: 2,
        numParallel: runs.length,
        tuning: { addon: { [name]: setting === "1" } },
      });
      try {
        const all = runs.map((o, i) =>
          collect(engine.generate(request(spec, chat(`tell me a story ${i}`), { num_predict: 48, ...o }))),
        );
        return (await Promise.all(all)).map((r) => r.text);
      } finally {
        await engine.shutdown();
      }
    })();
  }
  return outputs;
}

test("the repeat penalties see only the candidates that can still make the top k, and sample exactly what the whole-vocabulary pass does", async () => {
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
  assert.equal(await withAddonSwitch("penaltyPrefilter", false, async () => withPenalties({})), 0);
  // The same tokens with and without it: temperature sampling and greedy, with strong penalties, two sequences at
  // once.
  const strong = { top_k: 40, repeat_penalty: 1.5, repeat_last_n: 64 };
  const outputs = await outputsOffAndOn("penaltyPrefilter", "prefilter", [
    { ...strong, temperature: 1, seed: 11 },
    { ...strong, temperature: 0 },
  ]);
  assert.ok(outputs["1"]!.every((t) => t.length > 0));
  assert.deepEqual(outputs["1"], outputs["0"]);
});

test("a chain that starts with a top k takes it straight from the logits, and samples exactly what the whole candidate array does", async () => {
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
  assert.equal(await withAddonSwitch("directTopK", false, async () => leadingFor(BASE_CONFIG)), 0);
  // The switches reach the addon through its API only: a wrong value is refused whole, and nothing is read from the
  // environment any more.
  const { llama } = await llamaRuntime(2, silentLogger, testEngineBuild());
  const setSettings = (llama as unknown as { _bindings: { setGantrySettings(s: object): void } })._bindings
    .setGantrySettings;
  assert.throws(() => setSettings({ directTopK: false, penaltyPrefilter: "off" }), TypeError);
  assert.equal(leadingFor(BASE_CONFIG), 40, "a refused call changes nothing");
  process.env.NODE_LLAMA_CPP_DIRECT_TOP_K = "0";
  try {
    assert.equal(leadingFor(BASE_CONFIG), 40);
  } finally {
    delete process.env.NODE_LLAMA_CPP_DIRECT_TOP_K;
  }
  // The same tokens with and without it, for each kind of leading top k; four sequences decoding in the same steps.
  const outputs = await outputsOffAndOn("directTopK", "direct-top-k", [
    { temperature: 1, seed: 21, top_k: 40, repeat_penalty: 1.5 },
    { temperature: 1, seed: 22, top_k: 40, top_p: 0.95, repeat_penalty: 1 },
    { temperature: 0, repeat_penalty: 1 },
    { temperature: 0, repeat_penalty: 1.5 },
  ]);
  assert.ok(outputs["1"]!.every((t) => t.length > 0));
  assert.deepEqual(outputs["1"], outputs["0"]);
});
