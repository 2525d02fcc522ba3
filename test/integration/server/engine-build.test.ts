// Which inference binary `gantry serve` runs, as /api/version and the logs report it: the patched build setup made
// (persistent threadpool; required here, see test/support/patched-engine.ts) or, with GANTRY_ENGINE_BUILD=prebuilt,
// the package's prebuilt binary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { tinyModelPath } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { createModel, startTestServer } from "../../support/server.ts";

const version = async (url: string) =>
  (await (await fetch(`${url}/api/version`)).json()) as {
    version: string;
    engine: { build: string; threadpool: boolean; inlineSampling: boolean; inlineDecode: boolean };
  };

async function generates(url: string): Promise<number> {
  await createModel(url, "tiny", await tinyModelPath({ controlLogit: -8 }));
  const r = await fetch(`${url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "tiny", prompt: "hi", stream: false, options: { num_predict: 4 } }),
  });
  return ((await r.json()) as { eval_count: number }).eval_count;
}

test("/api/version reports the engine build: the patched one setup built", async () => {
  requirePatchedBuild();
  const srv = await startTestServer();
  try {
    const v = await version(srv.url);
    assert.match(v.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(v.engine, { build: "patched-local", threadpool: true, inlineSampling: true, inlineDecode: true });
    assert.equal(await generates(srv.url), 4);
  } finally {
    await srv.stop();
  }
});

test("GANTRY_ENGINE_BUILD=prebuilt runs the prebuilt binary and says so in the logs and /api/version", async () => {
  const srv = await startTestServer({ env: { GANTRY_ENGINE_BUILD: "prebuilt" } });
  try {
    assert.deepEqual((await version(srv.url)).engine, {
      build: "prebuilt",
      threadpool: false,
      inlineSampling: false,
      inlineDecode: false,
    });
    assert.equal(await generates(srv.url), 4);
    assert.match(srv.logs(), /using the prebuilt binary/);
    assert.match(srv.logs(), /GANTRY_ENGINE_BUILD=prebuilt/);
  } finally {
    await srv.stop();
  }
});
