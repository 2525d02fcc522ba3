// The node-llama-cpp runtime: loaded once per process (getLlama test-loads the binary in a child process, ~0.5 s) and
// never compiled at run time. Threads are always explicit: the library default oversubscribes small machines.
// Which binary: the patched local build that setup made (persistent threadpool, inline sampling and decoding;
// server/engine/native/) when it exists, else the package's prebuilt binary; GANTRY_ENGINE_BUILD=prebuilt forces the
// prebuilt one, =source the patched build with llama.cpp compiled from source (for A/B measurements).
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { Logger } from "../common/logger.ts";
import { linkLocalBuild, patchedBuild, readBuildStatus, type EngineBuildMode } from "./native/patched-build.ts";
import type { EngineBuildInfo } from "./types.ts";

export type { EngineBuildMode };

export interface LlamaRuntime {
  llama: Llama;
  /** What the binary does; whether steps decode inline is the engine's choice (EngineOptions.inlineDecode). */
  info: Omit<EngineBuildInfo, "inlineDecode">;
}

const runtimes = new Map<string, Promise<LlamaRuntime>>();

/** NODE_LLAMA_CPP_THREADPOOL=0 turns the patched build's threadpool off (read by the addon at context creation). */
export const threadpoolDisabledByEnv = (): boolean => offByEnv("NODE_LLAMA_CPP_THREADPOOL");

/**
 * NODE_LLAMA_CPP_INLINE_SAMPLING=0 makes the patched build sample on libuv workers again (read at context creation).
 */
export const inlineSamplingDisabledByEnv = (): boolean => offByEnv("NODE_LLAMA_CPP_INLINE_SAMPLING");

const offByEnv = (name: string): boolean => ["0", "false", "off"].includes(process.env[name] ?? "");

/**
 * The patched addon reads the threadpool's poll level when a context is created (NODE_LLAMA_CPP_THREADPOOL_POLL). Idle
 * pool threads busy-wait a bounded time for the next decode step, then sleep. Gantry defaults to llama-server's 50:
 * measured side by side (6 interleaved rounds, 2 cores), 0 (sleep at once) was 3–7% slower at 1, 4 and 8 streams, and
 * an idle server costs the same either way; 0 suits cores shared with other busy work.
 */
export function setThreadpoolPoll(poll: number): void {
  process.env.NODE_LLAMA_CPP_THREADPOOL_POLL = String(Math.max(0, Math.min(100, Math.round(poll))));
}

export function llamaRuntime(threads: number, logger: Logger, mode: EngineBuildMode = "auto"): Promise<LlamaRuntime> {
  const key = `${threads}:${mode}`;
  let p = runtimes.get(key);
  if (!p) {
    p = load(threads, logger, mode);
    runtimes.set(key, p);
    p.catch(() => runtimes.delete(key));
  }
  return p;
}

async function load(threads: number, logger: Logger, mode: EngineBuildMode): Promise<LlamaRuntime> {
  const patched = mode === "prebuilt" ? { reason: "GANTRY_ENGINE_BUILD=prebuilt" } : findPatchedBuild(mode);
  const llama = await getLlama({
    gpu: process.env.NODE_LLAMA_CPP_GPU ? "auto" : false,
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
  const info: LlamaRuntime["info"] = {
    build: isPatched ? "patched-local" : llama.buildType === "localBuild" ? "local" : "prebuilt",
    threadpool: isPatched && !threadpoolDisabledByEnv(),
    inlineSampling: isPatched && !inlineSamplingDisabledByEnv(),
  };
  const reason = "reason" in patched ? patched.reason : "the patched build did not load";
  if (isPatched)
    logger.info(
      { engine: info, binary: llama.buildType },
      "engine: patched node-llama-cpp build (persistent threadpool per context, inline sampling and decoding)",
    );
  else if (mode === "prebuilt")
    logger.info(
      { engine: info, reason },
      "engine: using the prebuilt binary (no persistent threadpool), as configured",
    );
  else
    logger.warn(
      { engine: info, reason },
      "engine: patched node-llama-cpp build not available; using the prebuilt binary (no persistent threadpool, slower generation)",
    );
  return { llama, info };
}

/** The patched build setup made, linked where getLlama finds it; or why there is none. */
function findPatchedBuild(
  mode: Exclude<EngineBuildMode, "prebuilt">,
): { cmakeOptions: Readonly<Record<string, string>> } | { reason: string } {
  const gpu = process.env.NODE_LLAMA_CPP_GPU ?? "";
  if (["cuda", "vulkan", "metal"].includes(gpu))
    return { reason: `NODE_LLAMA_CPP_GPU=${gpu} asks for a GPU backend and the patched build is CPU-only` };
  try {
    const build = patchedBuild({ mode });
    const status = readBuildStatus(build);
    if (status?.state !== "built") {
      return {
        reason:
          status?.state === "failed"
            ? `its build failed during setup (${status.reason}; log: ${status.log})`
            : `not built (setup builds it into ${build.dir})`,
      };
    }
    const linkError = linkLocalBuild(build);
    if (linkError) return { reason: linkError };
    return { cmakeOptions: build.cmakeOptions };
  } catch (e) {
    return { reason: (e as Error).message };
  }
}
