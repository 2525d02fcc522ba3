import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { patchedBuild } from "../../../../server/engine/native/patched-build.ts";
import { parseEnv } from "../../../../server/common/config.ts";
import { SetupEnvSchema } from "../../../../server/setup/config.ts";
import { addonLacks, ensurePatchedEngine, expectedBuildTime } from "../../../../server/setup/engine-build.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "engine-build-test-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The setup's settings as parsed from these variables (the rest unset). */
const settings = (env: Record<string, string>) => parseEnv(SetupEnvSchema, env);
const noTools = { PATH: path.join(tmp, "empty-bin") };

describe("ensurePatchedEngine", () => {
  it("builds nothing when GANTRY_ENGINE_BUILD=prebuilt", async () => {
    const r = await ensurePatchedEngine({ settings: settings({ GANTRY_ENGINE_BUILD: "prebuilt", GANTRY_CACHE: tmp }) });
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /GANTRY_ENGINE_BUILD=prebuilt/);
    assert.equal(fs.existsSync(path.join(tmp, "engine")), false);
  });

  it("falls back to the prebuilt binary, naming what is missing, without build tools", async () => {
    const r = await ensurePatchedEngine({ settings: settings({ GANTRY_CACHE: tmp, ...noTools }) });
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /missing cmake, a C\+\+ compiler, a C compiler, git, ninja or make/);
    assert.match(r.detail, /apt-get install cmake g\+\+ git ninja-build/);
    assert.match(r.detail, /prebuilt binary/);
  });

  it("strict (the test command) fails without build tools, saying what to install", async () => {
    await assert.rejects(
      ensurePatchedEngine({ strict: true, settings: settings({ GANTRY_CACHE: tmp, ...noTools }) }),
      /the patched engine build is required here: cannot build the patched addon: missing cmake.*apt-get install/,
    );
  });

  it("strict builds nothing with GANTRY_ENGINE_BUILD=prebuilt (an explicit choice)", async () => {
    const r = await ensurePatchedEngine({
      strict: true,
      settings: settings({ GANTRY_ENGINE_BUILD: "prebuilt", GANTRY_CACHE: tmp }),
    });
    assert.equal(r.state, "prebuilt");
  });

  it("does not retry a failed build unless asked", async () => {
    const cache = path.join(tmp, "failed");
    const build = patchedBuild({ cacheDir: cache, mode: "auto", cpuTarget: "native" });
    fs.mkdirSync(build.dir, { recursive: true });
    fs.writeFileSync(
      path.join(build.dir, "status.json"),
      JSON.stringify({ state: "failed", reason: "compiler crashed", log: "/x.log", failedAt: "t" }),
    );
    const r = await ensurePatchedEngine({ settings: settings({ GANTRY_CACHE: cache }) });
    assert.equal(r.state, "prebuilt");
    assert.match(r.detail, /failed before \(compiler crashed; log: \/x\.log\).*GANTRY_ENGINE_REBUILD=1/);
    // GANTRY_ENGINE_REBUILD=1 retries it (here it gets as far as the missing build tools).
    const retried = await ensurePatchedEngine({
      settings: settings({ GANTRY_CACHE: cache, GANTRY_ENGINE_REBUILD: "1", ...noTools }),
    });
    assert.equal(retried.state, "prebuilt");
    assert.match(retried.detail, /missing cmake/);
    // Strict retries it too.
    await assert.rejects(
      ensurePatchedEngine({ strict: true, settings: settings({ GANTRY_CACHE: cache, ...noTools }) }),
      /missing cmake/,
    );
  });
});

describe("expectedBuildTime", () => {
  it("divides a build's CPU time among the cores, and says how much longer the current load makes it", () => {
    // The addon with mtmd (clip.cpp and its image code) compiled in: 145 CPU-s; everything from source: 625.
    assert.equal(expectedBuildTime("addon", 2, 0.3), "about 70 s on 2 idle cores");
    assert.equal(expectedBuildTime("source", 2, 0.3), "about 5 minutes on 2 idle cores");
    assert.equal(expectedBuildTime("addon", 8, 1), "about 20 s on 8 idle cores");
    assert.equal(
      expectedBuildTime("addon", 2, 10),
      "about 70 s on 2 idle cores, 7 minutes at this machine's current load (10.0)",
    );
  });
});

describe("addonLacks", () => {
  it("names what a built addon lacks of the patch: the settings binding, sequence state, pooled outputs per sequence, batched sampling, and image input when mtmd is on", () => {
    const file = (name: string, text: string) => {
      const p = path.join(tmp, name);
      fs.writeFileSync(p, Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0]), Buffer.from(text)]));
      return p;
    };
    const patched = "\0setGantrySettings\0setSequenceState\0getSequenceEmbedding\0sampleTokens\0";
    const full = file("full.node", `${patched}AddonMtmdContext\0`);
    const textOnly = file("text-only.node", patched);
    const unpatched = file("unpatched.node", "\0AddonContext\0");
    assert.deepEqual(addonLacks(full, { NLC_MTMD: "ON" }), []);
    assert.deepEqual(addonLacks(textOnly, { NLC_MTMD: "ON" }), ["image input (AddonMtmdContext)"]);
    assert.deepEqual(addonLacks(textOnly, {}), [], "the A/B build without mtmd");
    assert.deepEqual(addonLacks(unpatched, { NLC_MTMD: "ON" }), [
      "the settings binding (setGantrySettings)",
      "sequence state in host memory (setSequenceState)",
      "pooled outputs per sequence (getSequenceEmbedding)",
      "a step's rows sampled in one call (sampleTokens)",
      "image input (AddonMtmdContext)",
    ]);
  });
});
