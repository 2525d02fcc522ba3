// The patched CUDA engine as the GPU bundle's run.sh makes it (server/setup/cuda-engine.ts), here with a stand-in for
// the CUDA module (no CUDA on this machine): the patched CPU build's files plus the module, under the folder name
// getLlama({ gpu: "cuda" }) looks in, node-llama-cpp's metadata saying CUDA, recorded as built and linked where
// node-llama-cpp finds it. Loading it on a GPU is the GPU check's (test/integration/gpu/gpu-path.test.ts there).
// The CPU build comes from the real cache (linked into a scratch one), so nothing is compiled here.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { parseEnv } from "../../../server/common/config.ts";
import {
  isCompleteBuild,
  linkLocalBuild,
  patchedBuild,
  readBuildStatus,
} from "../../../server/engine/native/patched-build.ts";
import { SetupEnvSchema } from "../../../server/setup/config.ts";
import { installCudaEngine } from "../../../server/setup/cuda-engine.ts";
import { testEngineBuild } from "../../support/engine-build.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cuda-engine-test-"));
let linked: string | undefined;
after(() => {
  // The install linked node-llama-cpp's localBuilds to the scratch cache: the CUDA link goes, the CPU one points back.
  if (linked) fs.rmSync(linked, { force: true });
  linkLocalBuild(patchedBuild(testEngineBuild()));
  fs.rmSync(scratch, { recursive: true, force: true });
});

test("the CUDA engine is the patched CPU build plus the CUDA module, where getLlama looks for CUDA", async () => {
  requirePatchedBuild();
  const cpu = patchedBuild(testEngineBuild());
  const cache = path.join(scratch, "cache");
  fs.mkdirSync(path.join(cache, "engine"), { recursive: true });
  fs.symlinkSync(cpu.dir, path.join(cache, "engine", path.basename(cpu.dir)));
  const module = path.join(scratch, "libggml-cuda.so");
  fs.writeFileSync(module, "stand-in for the CUDA backend module");
  const settings = parseEnv(SetupEnvSchema, { GANTRY_CACHE: cache, PATH: process.env.PATH ?? "" });

  const { build } = await installCudaEngine({ settings, cudaModule: module });
  linked = build.linkPath;
  assert.equal(build.key, `${cpu.key}-cuda`);
  assert.match(build.folder, /-cuda-/);
  assert.ok(isCompleteBuild(build.buildDir));
  assert.equal(readBuildStatus(build)?.state, "built");
  const release = path.join(build.buildDir, "Release");
  assert.equal(fs.readFileSync(path.join(release, "libggml-cuda.so"), "utf8"), "stand-in for the CUDA backend module");
  // Every file of the CPU build, the addon and its libraries, copied (not linked: the CPU build may be rebuilt).
  for (const f of fs.readdirSync(path.join(cpu.buildDir, "Release")).filter((f) => f !== "_nlcBuildMetadata.json"))
    assert.ok(!fs.lstatSync(path.join(release, f)).isSymbolicLink() && fs.existsSync(path.join(release, f)), f);
  const meta = JSON.parse(fs.readFileSync(path.join(release, "_nlcBuildMetadata.json"), "utf8")) as {
    buildOptions: { gpu: string; customCmakeOptions: Record<string, string> };
  };
  assert.equal(meta.buildOptions.gpu, "cuda");
  assert.deepEqual(meta.buildOptions.customCmakeOptions, cpu.cmakeOptions);
  assert.equal(fs.readlinkSync(build.linkPath), build.buildDir);

  // Made again (another GPU's module): replaced, not added to.
  fs.writeFileSync(module, "another module");
  await installCudaEngine({ settings, cudaModule: module });
  assert.equal(fs.readFileSync(path.join(release, "libggml-cuda.so"), "utf8"), "another module");
  await assert.rejects(
    installCudaEngine({ settings, cudaModule: path.join(scratch, "missing.so") }),
    /no CUDA backend module/,
  );
});
