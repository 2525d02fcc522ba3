// The inference binary: the patched local build that setup makes (a persistent threadpool per context, inline sampling and
// decoding), found and
// used by the engine; skipped where setup could not build it (no compiler: the prebuilt fallback is tested with the server).
import { test } from "node:test";
import assert from "node:assert/strict";
import { patchedBuild, readBuildStatus } from "../../../server/engine/native/patched-build.ts";
import { tinyModelPath } from "../../support/models.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

const built = readBuildStatus(patchedBuild())?.state === "built";

test("the patched build is used when setup built it, and every context attaches a threadpool of its thread count", { skip: !built && "setup did not build the patched addon here" }, async () => {
  const engine = await makeEngine({ threads: 2, numParallel: 2 });
  try {
    assert.deepEqual(engine.buildInfo, { build: "patched-local", threadpool: true, inlineSampling: true, inlineDecode: true });
    const model = specFor(await tinyModelPath({ controlLogit: -8 }), "threadpool");
    const results = await Promise.all([0, 1].map((i) => collect(engine.generate(request(model, chat(`hi ${i}`), { num_predict: 6, seed: i })))));
    assert.deepEqual(results.map((r) => r.stats.evalCount), [6, 6]);
    assert.equal(engine.running()[0]!.threadpoolThreads, 2);
  } finally {
    await engine.shutdown();
  }
});

test("inline sampling draws the same tokens as sampling on libuv workers, and the switch reaches the context", { skip: !built && "setup did not build the patched addon here" }, async () => {
  // The addon reads NODE_LLAMA_CPP_INLINE_SAMPLING when a context is created: one engine per setting, same process.
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "inline");
  const outputs: Record<string, string[]> = {};
  const saved = process.env.NODE_LLAMA_CPP_INLINE_SAMPLING;
  try {
    for (const setting of ["0", "1"]) {
      process.env.NODE_LLAMA_CPP_INLINE_SAMPLING = setting;
      const engine = await makeEngine({ threads: 2, numParallel: 2 });
      try {
        // Temperature sampling with penalties (the whole plain chain), two sequences decoding in the same steps.
        const results = await Promise.all([0, 1].map((i) => collect(engine.generate(request(model, chat(`story ${i}`), { num_predict: 24, seed: 7 + i, temperature: 1, repeat_penalty: 1.3 })))));
        assert.equal(engine.running()[0]!.inlineSampling, setting === "1");
        outputs[setting] = results.map((r) => r.text);
      } finally {
        await engine.shutdown();
      }
    }
  } finally {
    if (saved === undefined) delete process.env.NODE_LLAMA_CPP_INLINE_SAMPLING;
    else process.env.NODE_LLAMA_CPP_INLINE_SAMPLING = saved;
  }
  assert.ok(outputs["1"]!.every((t) => t.length > 0));
  assert.deepEqual(outputs["1"], outputs["0"]);
});

test("inline decoding generates the same tokens as decoding on libuv workers, and generation steps do decode inline", { skip: !built && "setup did not build the patched addon here" }, async () => {
  const model = specFor(await tinyModelPath({ controlLogit: -8 }), "inline-decode");
  const outputs: Record<string, string[]> = {};
  for (const inlineDecode of [false, true]) {
    const engine = await makeEngine({ threads: 2, numParallel: 2, inlineDecode });
    try {
      assert.equal(engine.buildInfo.inlineDecode, inlineDecode);
      // Two sequences decoding in the same steps, with a prompt long enough for a worker step first.
      const results = await Promise.all([0, 1].map((i) => collect(engine.generate(request(model, chat(`tell me a story about the number ${i} `.repeat(4)), { num_predict: 24, seed: 3 + i, temperature: 1 })))));
      outputs[String(inlineDecode)] = results.map((r) => r.text);
      const m = engine.running()[0]!;
      assert.equal(m.inlineDecode, inlineDecode);
      if (inlineDecode) assert.ok(m.decodeSteps.inline >= 20 && m.decodeSteps.worker >= 1, JSON.stringify(m.decodeSteps));
      else assert.equal(m.decodeSteps.inline, 0);
    } finally {
      await engine.shutdown();
    }
  }
  assert.ok(outputs.true!.every((t) => t.length > 0));
  assert.deepEqual(outputs.true, outputs.false);
});
