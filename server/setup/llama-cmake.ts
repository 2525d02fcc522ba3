// CMake options of llama.cpp builds made from the release node-llama-cpp ships: none of its network features, tests,
// examples or web UI; and the CUDA backend module's (shared ggml, backends loaded at run time), which the CUDA engine
// (server/setup/cuda-engine.ts) puts next to the patched addon: the image's CUDA stage and the GPU check's llama.cpp
// tools (test/bench/llama-cpp/tools.ts) build it with the same options, so both run the same GPU kernels.

/** No network features (curl, TLS), tests, examples, web UI or video input (mtmd would run ffmpeg). */
export const LEAN_LLAMA_OPTIONS: Readonly<Record<string, string>> = {
  LLAMA_CURL: "OFF",
  LLAMA_OPENSSL: "OFF",
  LLAMA_BUILD_TESTS: "OFF",
  LLAMA_BUILD_EXAMPLES: "OFF",
  LLAMA_BUILD_UI: "OFF",
  LLAMA_USE_PREBUILT_UI: "OFF",
  MTMD_VIDEO: "OFF",
};

/** Checks a CMAKE_CUDA_ARCHITECTURES list ("90", "75;80;86;89;90", "90a-real"). */
export function cudaArchitectures(architectures: string): string {
  if (!/^[0-9]+[af]?(-real|-virtual)?(;[0-9]+[af]?(-real|-virtual)?)*$/.test(architectures))
    throw new Error(`not a list of CUDA architectures: ${JSON.stringify(architectures)}`);
  return architectures;
}

/**
 * The CUDA backend for `architectures` only (so the build takes minutes, not an hour), as a module the CPU build's
 * ggml loads at run time. NCCL (multi-GPU) is off; nvcc is CUDACXX or on PATH.
 */
export function cudaModuleOptions(architectures: string): Record<string, string> {
  return {
    BUILD_SHARED_LIBS: "ON",
    GGML_BACKEND_DL: "ON",
    // ggml refuses a native CPU backend with run-time backends: the baseline one (x86-64-v3), which on a GPU only
    // runs what is not offloaded.
    GGML_NATIVE: "OFF",
    GGML_CUDA: "ON",
    CMAKE_CUDA_ARCHITECTURES: cudaArchitectures(architectures),
    GGML_CUDA_NCCL: "OFF",
    GGML_OPENMP: "OFF",
    // As node-llama-cpp builds its libraries: unversioned sonames, so the module's libggml-base.so is the one the
    // addon has loaded (its libraries have none); and $ORIGIN run paths, so the copies in bin/ load each other.
    CMAKE_PLATFORM_NO_VERSIONED_SONAME: "ON",
    CMAKE_BUILD_RPATH_USE_ORIGIN: "ON",
  };
}
