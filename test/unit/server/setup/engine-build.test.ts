import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { patchedBuild } from "../../../../server/engine/native/patched-build.ts";
import { ensurePatchedEngine, expectedBuildTime } from "../../../../server/setup/engine-build.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "engine-build-test-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs with these environment variables set (restored afterwards). */
async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe("ensurePatchedEngine", () => {
  it("builds nothing when GANTRY_ENGINE_BUILD=prebuilt", async () => {
    const r = await withEnv({ GANTRY_ENGINE_BUILD: "prebuilt", GANTRY_CACHE: tmp }, () => ensurePatchedEngine());
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /GANTRY_ENGINE_BUILD=prebuilt/);
    assert.equal(fs.existsSync(path.join(tmp, "engine")), false);
  });

  it("falls back to the prebuilt binary, naming what is missing, without build tools", async () => {
    const r = await withEnv(
      {
        GANTRY_ENGINE_BUILD: undefined,
        GANTRY_CACHE: tmp,
        PATH: path.join(tmp, "empty-bin"),
        CC: undefined,
        CXX: undefined,
      },
      () => ensurePatchedEngine(),
    );
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /missing cmake, a C\+\+ compiler, a C compiler, git, ninja or make/);
    assert.match(r.detail, /apt-get install cmake g\+\+ git ninja-build/);
    assert.match(r.detail, /prebuilt binary/);
  });

  it("strict (the test command) fails without build tools, saying what to install", async () => {
    await assert.rejects(
      withEnv(
        {
          GANTRY_ENGINE_BUILD: undefined,
          GANTRY_CACHE: tmp,
          PATH: path.join(tmp, "empty-bin"),
          CC: undefined,
          CXX: undefined,
        },
        () => ensurePatchedEngine({ strict: true }),
      ),
      /the patched engine build is required here: cannot build the patched addon: missing cmake.*apt-get install/,
    );
  });

  it("strict builds nothing with GANTRY_ENGINE_BUILD=prebuilt (an explicit choice)", async () => {
    const r = await withEnv({ GANTRY_ENGINE_BUILD: "prebuilt", GANTRY_CACHE: tmp }, () =>
      ensurePatchedEngine({ strict: true }),
    );
    assert.equal(r.state, "prebuilt");
  });

  it("does not retry a failed build unless asked", async () => {
    const cache = path.join(tmp, "failed");
    const build = patchedBuild({ cacheDir: cache });
    fs.mkdirSync(build.dir, { recursive: true });
    fs.writeFileSync(
      path.join(build.dir, "status.json"),
      JSON.stringify({ state: "failed", reason: "compiler crashed", log: "/x.log", failedAt: "t" }),
    );
    const r = await withEnv(
      { GANTRY_ENGINE_BUILD: undefined, GANTRY_ENGINE_REBUILD: undefined, GANTRY_CACHE: cache },
      () => ensurePatchedEngine(),
    );
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /failed before \(compiler crashed; log: \/x\.log\).*GANTRY_ENGINE_REBUILD=1/);
    // Strict retries it (here it gets as far as the missing build tools).
    await assert.rejects(
      withEnv(
        {
          GANTRY_ENGINE_BUILD: undefined,
          GANTRY_ENGINE_REBUILD: undefined,
          GANTRY_CACHE: cache,
          PATH: path.join(tmp, "empty-bin"),
        },
        () => ensurePatchedEngine({ strict: true }),
      ),
      /missing cmake/,
    );
  });
});

describe("expectedBuildTime", () => {
  it("divides a build's CPU time among the cores, and says how much longer the current load makes it", () => {
    assert.equal(expectedBuildTime("addon", 2, 0.3), "about 20 s on 2 idle cores");
    assert.equal(expectedBuildTime("source", 2, 0.3), "about 4 minutes on 2 idle cores");
    assert.equal(expectedBuildTime("addon", 8, 1), "about 10 s on 8 idle cores");
    assert.equal(
      expectedBuildTime("addon", 2, 10),
      "about 20 s on 2 idle cores, 2 minutes at this machine's current load (10.0)",
    );
  });
});
