// The patched CUDA engine: the patched CPU build ("addon" strategy: node-llama-cpp's prebuilt llama.cpp libraries,
// whose ggml loads its backends at run time, GGML_BACKEND_DL) plus a CUDA backend module, libggml-cuda.so, built from
// the same llama.cpp source for the machine's GPU. node-llama-cpp's own CUDA package is laid out the same way: its CPU
// package's files (the same libggml-base.so) and that module. The result goes into its own cache folder (patchedBuild
// with gpu "cuda") under the folder name getLlama({ gpu: "cuda" }) looks in, so GANTRY_GPU=cuda (and auto on a CUDA
// machine) runs the patched addon on the GPU. The GPU bundle's run.sh builds the module (test/bench/llama-cpp/tools.ts,
// CUDA variant) and calls installCudaEngine.
import fs from "node:fs";
import path from "node:path";
import { withDirLock } from "../common/dir-lock.ts";
import {
  isCompleteBuild,
  linkLocalBuild,
  nodeLlamaCppDir,
  patchedBuild,
  type PatchedBuild,
} from "../engine/native/patched-build.ts";
import type { SetupEnv } from "./config.ts";
import { buildMetadata, ensurePatchedEngine, writeStatus } from "./engine-build.ts";

export interface CudaEngine {
  build: PatchedBuild;
  /** The CPU build it was made from. */
  cpu: PatchedBuild;
}

/**
 * Makes the CUDA engine from the patched CPU build (built first if needed) and `cudaModule` (a libggml-cuda.so built
 * with GGML_BACKEND_DL from the llama.cpp release node-llama-cpp ships), replacing an earlier one, and links it where
 * getLlama finds it. Throws when the CPU build is not the "addon" kind (a "source" build's ggml may not load modules).
 */
export async function installCudaEngine(o: {
  settings: SetupEnv;
  cudaModule: string;
  say?: (line: string) => void;
  packageDir?: string;
}): Promise<CudaEngine> {
  const { settings } = o;
  const packageDir = o.packageDir ?? nodeLlamaCppDir();
  const started = performance.now();
  await ensurePatchedEngine({ settings, strict: true, ...(o.say ? { log: o.say } : {}) });
  const base = {
    mode: settings.GANTRY_ENGINE_BUILD,
    cacheDir: settings.GANTRY_CACHE,
    cpuTarget: settings.GANTRY_ENGINE_CPU,
    packageDir,
  };
  const cpu = patchedBuild(base);
  if (cpu.strategy !== "addon")
    throw new Error(
      `the CUDA engine is made from an "addon" build of the patched engine, and this one is "source" (${cpu.sourceReason})`,
    );
  if (!fs.existsSync(o.cudaModule)) throw new Error(`no CUDA backend module at ${o.cudaModule}`);
  const build = patchedBuild({ ...base, gpu: "cuda" });
  await withDirLock(`${build.dir}.lock`, async () => {
    const out = `${build.dir}.tmp`;
    fs.rmSync(out, { recursive: true, force: true });
    const release = path.join(out, build.folder, "Release");
    fs.cpSync(path.join(cpu.buildDir, "Release"), release, { recursive: true, dereference: true });
    fs.copyFileSync(o.cudaModule, path.join(release, "libggml-cuda.so"));
    fs.writeFileSync(
      path.join(release, "_nlcBuildMetadata.json"),
      JSON.stringify(await buildMetadata(build, packageDir, settings.GANTRY_LLAMA_CPP_SOURCE, "cuda")),
    );
    fs.writeFileSync(path.join(out, build.folder, "buildDone.status"), "");
    if (!isCompleteBuild(path.join(out, build.folder))) throw new Error(`incomplete CUDA engine in ${out}`);
    fs.rmSync(build.dir, { recursive: true, force: true });
    fs.renameSync(out, build.dir);
    const seconds = Math.round((performance.now() - started) / 1000);
    writeStatus(build, { state: "built", seconds, builtAt: new Date().toISOString() });
  });
  const linkError = linkLocalBuild(build);
  if (linkError) throw new Error(linkError);
  return { build, cpu };
}
