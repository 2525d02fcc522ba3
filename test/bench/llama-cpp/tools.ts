// llama.cpp's own tools (llama-server, llama-bench, llama-mtmd-cli), built from the very llama.cpp release
// node-llama-cpp ships (its git bundle, with the patches node-llama-cpp applies, or a GPU bundle's unpacked copy:
// GANTRY_LLAMA_CPP_SOURCE), Release, with no network features. Two variants: "cpu" (default): static, with llama.cpp's
// default options (GGML_NATIVE, OpenMP); "cuda": shared libraries with backends loaded at run time (GGML_BACKEND_DL),
// the CUDA backend for the given GPU architectures only, whose libggml-cuda.so is also the patched CUDA engine's
// (server/setup/cuda-engine.ts), so Gantry and llama-server run the same GPU kernels. Only the tools asked for are
// built, into a build tree kept in $GANTRY_CACHE/llama.cpp/<release>-<commit>-<platform>[-cuda-<archs>].work (outside
// the repo), so a tool asked for later compiles only what it adds; the binaries (and the variant's shared libraries)
// are copied into <dir>/bin. Later calls return at once. Prints the cold build cost.
import fs from "node:fs";
import path from "node:path";
import { withDirLock } from "../../../server/common/dir-lock.ts";
import { nodeLlamaCppVersion } from "../../../server/engine/native/patched-build.ts";
import { parseEnv } from "../../../server/common/config.ts";
import { SetupEnvSchema } from "../../../server/setup/config.ts";
import { cudaArchitectures, cudaModuleOptions, LEAN_LLAMA_OPTIONS } from "../../../server/setup/llama-cmake.ts";
import { buildTools, bundledRelease, cloneBundledLlamaCpp, cmakeBuild } from "../../../server/setup/llama-source.ts";

export type LlamaToolName = "llama-server" | "llama-bench" | "llama-batched-bench" | "llama-mtmd-cli";

export interface LlamaTools {
  /** Paths of the binaries (those not asked for may not exist). */
  server: string;
  bench: string;
  /** llama-batched-bench: n parallel sequences decoding in one batch, no server (the GPU check's ceiling). */
  batchedBench: string;
  mtmdCli: string;
  /** The llama.cpp release and commit, for the report. */
  release: string;
  commit: string;
  dir: string;
  /** "cuda": the CUDA backend module the tools load (and the patched CUDA engine takes). */
  cudaModule?: string;
  variant: string;
}

/** How the tools are built: options beyond the common ones, the extra targets, and the cache folder's suffix. */
export interface LlamaToolsVariant {
  name: string;
  suffix: string;
  options: Record<string, string>;
  /** Targets built with every tool (backend modules, which no tool links). */
  extraTargets: string[];
  /** Copy the shared libraries and backend modules of build/bin next to the tools. */
  shared: boolean;
}

export const CPU_TOOLS: LlamaToolsVariant = {
  name: "cpu",
  suffix: "",
  options: { BUILD_SHARED_LIBS: "OFF", GGML_NATIVE: "ON" },
  extraTargets: [],
  shared: false,
};

/**
 * The CUDA variant for `architectures` (CMAKE_CUDA_ARCHITECTURES, e.g. "90" for an H100/H200): only those, so the
 * build takes minutes, not an hour. NCCL (multi-GPU) is off; nvcc is CUDACXX or on PATH.
 */
export function cudaTools(architectures: string): LlamaToolsVariant {
  return {
    name: `cuda ${architectures}`,
    suffix: `-cuda-${cudaArchitectures(architectures).replaceAll(";", "_")}`,
    options: cudaModuleOptions(architectures),
    extraTargets: ["ggml-cpu", "ggml-cuda"],
    shared: true,
  };
}

const log = (msg: string): void => {
  process.stderr.write(`llama.cpp tools: ${msg}\n`);
};

const pending = new Map<string, Promise<LlamaTools>>();

/** CMake options of a variant's build: its own, and none of llama.cpp's network features, tests or examples. */
export function toolsCmakeOptions(variant: LlamaToolsVariant): Record<string, string> {
  return { ...variant.options, ...LEAN_LLAMA_OPTIONS };
}

/** Builds (once, cached) the tools named and returns where they are. */
export function llamaTools(
  names: readonly LlamaToolName[] = ["llama-server", "llama-bench"],
  variant: LlamaToolsVariant = CPU_TOOLS,
): Promise<LlamaTools> {
  const key = `${variant.suffix}:${[...names].sort().join(",")}`;
  let p = pending.get(key);
  if (!p) {
    p = ensure(names, variant);
    pending.set(key, p);
    p.catch(() => pending.delete(key));
  }
  return p;
}

async function ensure(names: readonly LlamaToolName[], variant: LlamaToolsVariant): Promise<LlamaTools> {
  const toolchain = parseEnv(SetupEnvSchema);
  const sourceDir = toolchain.GANTRY_LLAMA_CPP_SOURCE;
  const rel = await bundledRelease(undefined, sourceDir);
  const dir = path.join(
    toolchain.GANTRY_CACHE,
    "llama.cpp",
    `${rel.release}-${rel.commit.slice(0, 12)}-${process.platform}-${process.arch}${variant.suffix}`,
  );
  const bin = path.join(dir, "bin");
  const tools: LlamaTools = {
    server: path.join(bin, "llama-server"),
    bench: path.join(bin, "llama-bench"),
    batchedBench: path.join(bin, "llama-batched-bench"),
    mtmdCli: path.join(bin, "llama-mtmd-cli"),
    release: rel.release,
    commit: rel.commit,
    dir,
    variant: variant.name,
    ...(variant.extraTargets.includes("ggml-cuda") ? { cudaModule: path.join(bin, "libggml-cuda.so") } : {}),
  };
  const wanted = [...names, ...variant.extraTargets.map((t) => `lib${t}.so`)];
  const missing = () => wanted.filter((n) => !fs.existsSync(path.join(bin, n)));
  if (missing().length === 0) return tools;

  const have = buildTools(toolchain);
  if (!have.ok) throw new Error(`cannot build ${names.join(", ")}: missing ${have.missing.join(", ")}`);
  return withDirLock(
    `${dir}.lock`,
    async () => {
      if (missing().length === 0) return tools;
      const targets = [...names.filter((n) => !fs.existsSync(path.join(bin, n))), ...variant.extraTargets];
      const started = performance.now();
      const work = `${dir}.work`;
      fs.mkdirSync(work, { recursive: true });
      const logFile = path.join(work, "build.log");
      const src = path.join(work, "llama.cpp");
      log(
        `building ${targets.join(", ")} ${rel.release} (${rel.commit.slice(0, 12)}, as shipped by node-llama-cpp ${nodeLlamaCppVersion()}; ${variant.name}) into ${dir}, once; log: ${logFile}`,
      );
      if (!fs.existsSync(path.join(src, ".gantry-ready"))) {
        fs.rmSync(src, { recursive: true, force: true });
        await cloneBundledLlamaCpp(src, { log: logFile, sourceDir });
        fs.writeFileSync(path.join(src, ".gantry-ready"), "");
      }
      await cmakeBuild({
        src,
        build: path.join(work, "build"),
        targets,
        log: logFile,
        toolchain,
        options: toolsCmakeOptions(variant),
      });
      fs.mkdirSync(bin, { recursive: true });
      const built = path.join(work, "build", "bin");
      // Libraries first, the tools last: a tool in place means what it loads is too.
      const libraries = variant.shared ? fs.readdirSync(built).filter((f) => /\.so(\.\d+)*$/.test(f)) : [];
      for (const name of [...libraries, ...targets.filter((t) => !variant.extraTargets.includes(t))]) {
        const tmp = path.join(bin, `.${name}.${process.pid}.tmp`);
        fs.copyFileSync(path.join(built, name), tmp);
        fs.chmodSync(tmp, 0o755);
        fs.renameSync(tmp, path.join(bin, name));
      }
      log(
        `built ${targets.join(", ")} in ${Math.round((performance.now() - started) / 1000)} s (cold cost; cached from now on)`,
      );
      return tools;
    },
    { pollMs: 2000, onWait: () => log("waiting for another process that is building them") },
  );
}

if (import.meta.main) {
  const names = process.argv.slice(2) as LlamaToolName[];
  console.log(await llamaTools(names.length > 0 ? names : undefined));
}
