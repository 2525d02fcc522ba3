// GANTRY_GPU names a backend this machine does not have (the operator renders `cuda` for GPU profiles): the server
// serves on the CPU and says so, as Ollama does without a usable GPU, instead of failing to start.
import assert from "node:assert/strict";
import { test } from "node:test";
import { tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer } from "../../support/server.ts";

test("GANTRY_GPU=cuda without a CUDA backend: a warning, then the model answers on the CPU and ps says so", async () => {
  const srv = await startTestServer({ env: { GANTRY_GPU: "cuda" } });
  try {
    await createModel(srv.url, "tiny", await tinyModelPath());
    const res = await fetch(`${srv.url}/api/generate`, {
      method: "POST",
      body: JSON.stringify({ model: "tiny", prompt: "hi", stream: false, options: { num_predict: 3 } }),
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { done: boolean }).done, true);
    const ps = (await (await fetch(`${srv.url}/api/ps`)).json()) as { models: Array<{ size_vram: number }> };
    assert.equal(ps.models[0]?.size_vram, 0);
    assert.match(srv.logs(), /GANTRY_GPU=cuda but no usable cuda backend here; running on the CPU/);
  } finally {
    await srv.stop();
  }
});
