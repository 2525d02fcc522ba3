// The node-llama-cpp runtime: loaded once per process (getLlama test-loads the binary in a child process, ~0.5 s) and
// never compiled at run time. Threads are always explicit: the library default oversubscribes small machines.
// Which binary: the patched local build that setup made (persistent threadpool, inline sampling and decoding;
// server/engine/native/) when it exists, else the package's prebuilt binary; GANTRY_ENGINE_BUILD=prebuilt forces the
// prebuilt one, =source the patched build with llama.cpp compiled from source (for A/B measurements).
// GPU (GANTRY_GPU): auto uses the best GPU backend node-llama-cpp finds (CUDA, Vulkan, Metal) and the CPU without one;
// CUDA runs on the patched CUDA engine where one was made (server/setup/cuda-engine.ts: the patched CPU build plus a
// CUDA backend module), else, as Vulkan and Metal always, on node-llama-cpp's prebuilt binary for it.
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { Logger } from "../common/logger.ts";
import { llamaGpuOption, type GpuSetting } from "./gpu.ts";
import {
  linkLocalBuild,
  patchedBuild,
  readBuildStatus,
  type EngineBuildMode,
  type EngineBuildSettings,
} from "./native/patched-build.ts";
import type { EngineBuildInfo } from "./types.ts";

export type { EngineBuildMode, EngineBuildSettings };

export interface LlamaRuntime {
  llama: Llama;
  /** Which binary runs inference. */
  build: EngineBuildInfo["build"];
}

const runtimes = new Map<string, Promise<LlamaRuntime>>();

/** The runtime of `threads` threads on the binary `build` selects (see findPatchedBuild), loaded once per process. */
export function llamaRuntime(
  threads: number,
  logger: Logger,
  build: EngineBuildSettings,
  gpu: GpuSetting = "off",
): Promise<LlamaRuntime> {
  const key = JSON.stringify([threads, build.mode, build.cacheDir, build.cpuTarget, gpu]);
  let p = runtimes.get(key);
  if (!p) {
    p = load(threads, logger, build, gpu);
    runtimes.set(key, p);
    p.catch(() => runtimes.delete(key));
  }
  return p;
}

async function load(
  threads: number,
  logger: Logger,
  build: EngineBuildSettings,
  gpu: GpuSetting,
): Promise<LlamaRuntime> {
  try {
    return await loadFor(threads, logger, build, gpu);
  } catch (err) {
    if (gpu === "auto" || gpu === "off") throw err;
    // As Ollama without a usable GPU: serve on the CPU and say so (ps then reports 100% CPU), rather than not at all.
    logger.warn(
      { gpu, err: err instanceof Error ? `${err.name}: ${err.message}` : String(err) },
      `engine: GANTRY_GPU=${gpu} but no usable ${gpu} backend here; running on the CPU`,
    );
    return loadFor(threads, logger, build, "off");
  }
}

async function loadFor(
  threads: number,
  logger: Logger,
  settings: EngineBuildSettings,
  gpu: GpuSetting,
): Promise<LlamaRuntime> {
  const mode = settings.mode;
  const patched = mode === "prebuilt" ? { reason: "GANTRY_ENGINE_BUILD=prebuilt" } : findPatchedBuild(settings, gpu);
  const llama = await getLlama({
    gpu: llamaGpuOption(gpu),
    build: "never",
    // With these options getLlama loads the patched local build, and falls back to the prebuilt binary without it.
    ...("cmakeOptions" in patched ? { cmakeOptions: { ...patched.cmakeOptions } } : {}),
    maxThreads: threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (!text) return;
      if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal)
        logger.error({ component: "llama.cpp" }, text);
      else if (level === LlamaLogLevel.warn) logger.warn({ component: "llama.cpp" }, text);
      else logger.debug({ component: "llama.cpp" }, text);
    },
  });
  const isPatched = "cmakeOptions" in patched && llama.buildType === "localBuild";
  const build: LlamaRuntime["build"] = isPatched
    ? "patched-local"
    : llama.buildType === "localBuild"
      ? "local"
      : "prebuilt";
  const info = { build, gpu: llama.gpu };
  const reason = "reason" in patched ? patched.reason : "the patched build did not load";
  if (isPatched)
    logger.info(
      { engine: info, binary: llama.buildType },
      "engine: patched node-llama-cpp build (persistent threadpool per context, inline sampling and decoding)",
    );
  else if (mode === "prebuilt" || llama.gpu !== false)
    logger.info(
      { engine: info, reason },
      "engine: using the prebuilt binary (no persistent threadpool), as configured or for the GPU",
    );
  else
    logger.warn(
      { engine: info, reason },
      "engine: patched node-llama-cpp build not available; using the prebuilt binary (no persistent threadpool, slower generation)",
    );
  return { llama, build };
}

/**
 * The patched build setup made, linked where getLlama finds it; or why there is none. GANTRY_GPU=cuda: the CUDA engine;
 * auto: the CPU build, and the CUDA engine linked too when it was made (getLlama tries the GPU it finds first, with the
 * same options, so it loads the CUDA engine where CUDA works and the CPU build elsewhere).
 */
function findPatchedBuild(
  settings: EngineBuildSettings,
  gpu: GpuSetting,
): { cmakeOptions: Readonly<Record<string, string>> } | { reason: string } {
  if (gpu !== "auto" && gpu !== "off" && gpu !== "cuda")
    return { reason: `GANTRY_GPU=${gpu} asks for a GPU backend the patched build does not have (it has CUDA)` };
  try {
    const build = patchedBuild({ ...settings, gpu: gpu === "cuda" ? "cuda" : false });
    const status = readBuildStatus(build);
    if (status?.state !== "built") {
      return {
        reason:
          gpu === "cuda"
            ? `no patched CUDA engine (the GPU bundle's run.sh makes one into ${build.dir})`
            : status?.state === "failed"
              ? `its build failed during setup (${status.reason}; log: ${status.log})`
              : `not built (setup builds it into ${build.dir})`,
      };
    }
    const linkError = linkLocalBuild(build);
    if (linkError) return { reason: linkError };
    if (gpu === "auto") {
      const cuda = patchedBuild({ ...settings, gpu: "cuda" });
      if (readBuildStatus(cuda)?.state === "built") linkLocalBuild(cuda);
    }
    return { cmakeOptions: build.cmakeOptions };
  } catch (e) {
    return { reason: (e as Error).message };
  }
}
