// The inference binary: the patched local build that setup makes (a persistent threadpool per context), found and
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
    assert.deepEqual(engine.buildInfo, { build: "patched-local", threadpool: true });
    const model = specFor(await tinyModelPath({ controlLogit: -8 }), "threadpool");
    const results = await Promise.all([0, 1].map((i) => collect(engine.generate(request(model, chat(`hi ${i}`), { num_predict: 6, seed: i })))));
    assert.deepEqual(results.map((r) => r.stats.evalCount), [6, 6]);
    assert.equal(engine.running()[0]!.threadpoolThreads, 2);
  } finally {
    await engine.shutdown();
  }
});
