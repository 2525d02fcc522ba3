// node server/setup/cuda-engine-build.ts --architectures "75;80;86;89;90": the image's CUDA stage (Dockerfile,
// cuda-engine). Builds the CUDA backend module (libggml-cuda.so) from the llama.cpp release node-llama-cpp ships, with
// the options the GPU check uses (server/setup/llama-cmake.ts), then makes the CUDA engine from it and the patched CPU
// build (server/setup/cuda-engine.ts). Needs nvcc (a CUDA devel base), CMake, a compiler and git; no GPU.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { parseEnv } from "../common/config.ts";
import { SetupEnvSchema } from "./config.ts";
import { installCudaEngine } from "./cuda-engine.ts";
import { cudaModuleOptions, LEAN_LLAMA_OPTIONS } from "./llama-cmake.ts";
import { cloneBundledLlamaCpp, cmakeBuild } from "./llama-source.ts";

const say = (line: string): void => {
  process.stderr.write(`cuda engine: ${line}\n`);
};

export async function buildCudaEngine(architectures: string): Promise<string> {
  const settings = parseEnv(SetupEnvSchema);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cuda-"));
  const log = path.join(work, "build.log");
  try {
    const src = path.join(work, "llama.cpp");
    await cloneBundledLlamaCpp(src, { log, sourceDir: settings.GANTRY_LLAMA_CPP_SOURCE });
    say(`building libggml-cuda.so for CUDA architectures ${architectures}`);
    await cmakeBuild({
      src,
      build: path.join(work, "build"),
      targets: ["ggml-cuda"],
      log,
      toolchain: settings,
      options: { ...cudaModuleOptions(architectures), ...LEAN_LLAMA_OPTIONS },
    });
    const { build } = await installCudaEngine({
      settings,
      cudaModule: path.join(work, "build", "bin", "libggml-cuda.so"),
      say,
    });
    return build.dir;
  } catch (e) {
    if (fs.existsSync(log)) process.stderr.write(fs.readFileSync(log, "utf8").slice(-4000));
    throw e;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { architectures: { type: "string", default: "90" } } });
  say(`ready: ${await buildCudaEngine(values.architectures)}`);
}
