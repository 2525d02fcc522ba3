// Identity and location of the patched node-llama-cpp addon (persistent threadpool, inline sampling, image input
// through llama.cpp's mtmd; see node-llama-cpp-addon.patch): how it is built (the strategy), the CMake options it is
// built with, the cache directory it lives in (outside the repo, keyed by the node-llama-cpp version, the platform and
// a hash of the patch, options and strategy) and the folder name under which node-llama-cpp's getLlama({ build:
// "never", cmakeOptions }) looks for it (llama/localBuilds/<folder> inside the package). Setup
// (server/setup/engine-build.ts) and the runtime (server/engine/llama-runtime.ts) both call patchedBuild(), so they
// agree on which build to make and load.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export const PATCH_FILE = path.join(import.meta.dirname, "node-llama-cpp-addon.patch");

/**
 * The build's CMake options beyond node-llama-cpp's own defaults. They are also passed to getLlama, which derives the
 * local build's folder name from them. OpenMP is off so ggml's own threadpool (the one the patch attaches) runs graphs.
 */
export const PATCHED_CMAKE_OPTIONS: Readonly<Record<string, string>> = {
  GGML_OPENMP: "OFF",
  NLC_MTMD: "ON",
};

/**
 * Which CPUs the patched build runs on (GANTRY_ENGINE_CPU): "native" (default) optimizes for the machine that builds it
 * (-march=native), right for a local setup; "portable" targets ggml's baseline without native tuning (x86-64-v3: AVX2,
 * FMA, F16C; armv8 on arm64), for container images that run on other machines. Part of the cache key, not of the folder
 * name getLlama looks for, so the runtime needs the same setting to find the build.
 */
export type EngineCpuTarget = "native" | "portable";

export const CPU_TARGET_CMAKE_OPTIONS: Readonly<Record<EngineCpuTarget, Readonly<Record<string, string>>>> = {
  native: { GGML_NATIVE: "ON" },
  portable: { GGML_NATIVE: "OFF" },
};

/**
 * How the patched addon is built. "addon": only the addon is compiled, against the llama.cpp and ggml libraries of the
 * installed prebuilt package (the patch changes nothing in llama.cpp or ggml, and that package is built from the same
 * llama.cpp release): about a minute on 2 cores. "source": llama.cpp and ggml are compiled too, from the bundled
 * sources, tuned by GANTRY_ENGINE_CPU (the way every build was made before: 4-15 minutes on 2 cores).
 */
export type EngineBuildStrategy = "addon" | "source";

/**
 * GANTRY_ENGINE_BUILD: "auto" (default) = the patched addon, built the "addon" way when the prebuilt package allows it,
 * else the "source" way; "source" = always the "source" way; "prebuilt" = no patched build (the package's binary).
 */
export type EngineBuildMode = "auto" | "source" | "prebuilt";

/**
 * Which patched build the setup makes and the runtime loads: the GANTRY_ENGINE_BUILD, GANTRY_CACHE and
 * GANTRY_ENGINE_CPU settings (server/config.ts), parsed by the process's entry point and passed down.
 */
export interface EngineBuildSettings {
  mode: EngineBuildMode;
  /** GANTRY_CACHE: the build lives in <cacheDir>/engine/<key>. */
  cacheDir: string;
  cpuTarget: EngineCpuTarget;
}

/** A process's parsed settings (server/config.ts, server/setup/config.ts) as build settings. */
export const engineBuildSettings = (config: {
  GANTRY_ENGINE_BUILD: EngineBuildMode;
  GANTRY_CACHE: string;
  GANTRY_ENGINE_CPU: EngineCpuTarget;
}): EngineBuildSettings => ({
  mode: config.GANTRY_ENGINE_BUILD,
  cacheDir: config.GANTRY_CACHE,
  cpuTarget: config.GANTRY_ENGINE_CPU,
});

/** Bump when the way the build is made changes (not the patch or the stub: their content is hashed). */
const BUILDER_VERSION = 1;

/** Stands in for llama.cpp's CMakeLists in an "addon" build: the prebuilt libraries as CMake targets. */
export const PREBUILT_LLAMA_CMAKE = path.join(import.meta.dirname, "..", "..", "setup", "prebuilt-llama-cpp.cmake");

/** The extra CMake option of an "addon" build: read by the stub, and it gives the build its own getLlama folder. */
const ADDON_CMAKE_OPTIONS: Readonly<Record<string, string>> = { GANTRY_PREBUILT_LIBS: "ON" };

/** The installed node-llama-cpp package directory. */
export function nodeLlamaCppDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))), "..");
}

export function nodeLlamaCppVersion(dir = nodeLlamaCppDir()): string {
  return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
}

/** node-llama-cpp's platform names. */
export function nlcPlatform(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? "win" : platform === "darwin" ? "mac" : platform;
}

/** node-llama-cpp's hashString: SHA-1 bytes, each in base 36, joined. */
export function nlcHash(text: string): string {
  return Array.from(createHash("sha1").update(text).digest())
    .map((b) => b.toString(36))
    .join("");
}

/**
 * The folder name node-llama-cpp gives a build for `gpu` (false: the CPU) with these custom CMake options
 * (getBuildFolderNameForBuildOptions).
 */
export function localBuildFolderName(
  cmakeOptions: Readonly<Record<string, string>>,
  platform = nlcPlatform(),
  arch: string = process.arch,
  gpu: PatchedGpu | false = false,
): { folder: string; binVariant: (release: string) => string } {
  const name = gpu ? `${platform}-${arch}-${gpu}` : `${platform}-${arch}`;
  const variant = (release: string) => (gpu ? `${gpu}.${release}` : release);
  const pairs = Object.keys(cmakeOptions)
    .filter((k) => k !== "")
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(cmakeOptions[k]!)}`);
  if (pairs.length === 0) return { folder: name, binVariant: variant };
  const hash = nlcHash(pairs.join(";"));
  return { folder: `${name}-${hash}`, binVariant: (release) => `${variant(release)}.${hash.slice(0, 8)}` };
}

/** The installed prebuilt CPU package's libraries an "addon" build links against. */
export interface PrebuiltLibraries {
  /** Its bins/<platform>-<arch> folder: llama-addon.node, libllama.<release>.so, libggml*.so, libggml-cpu-*.so. */
  dir: string;
  /** The llama.cpp release it was built from (node-llama-cpp's name, e.g. "v0.5.0"): the libraries' name suffix. */
  release: string;
}

/**
 * The prebuilt package's libraries when an "addon" build can link against them, else why not: Linux only (the macOS
 * packages are Metal builds), the package of the same version as node-llama-cpp, built from the llama.cpp release the
 * package bundles as sources, CPU-only, with the libraries present.
 */
export function prebuiltLibraries(packageDir = nodeLlamaCppDir()): PrebuiltLibraries | { reason: string } {
  if (process.platform !== "linux") return { reason: `no prebuilt CPU libraries to link on ${process.platform}` };
  const name = `@node-llama-cpp/${nlcPlatform()}-${process.arch}`;
  let pkgDir: string;
  try {
    const main = createRequire(path.join(packageDir, "package.json")).resolve(name);
    pkgDir = path.resolve(path.dirname(main), "..");
  } catch {
    return { reason: `${name} is not installed` };
  }
  try {
    const version = nodeLlamaCppVersion(pkgDir);
    if (version !== nodeLlamaCppVersion(packageDir))
      return { reason: `${name} is ${version}, node-llama-cpp ${nodeLlamaCppVersion(packageDir)}` };
    const dir = path.join(pkgDir, "bins", `${nlcPlatform()}-${process.arch}`);
    const meta = JSON.parse(fs.readFileSync(path.join(dir, "_nlcBuildMetadata.json"), "utf8")) as {
      buildOptions: { gpu: unknown; llamaCpp: { release: string }; customCmakeOptions?: object };
    };
    const release = meta.buildOptions.llamaCpp.release;
    const bundled = (
      JSON.parse(fs.readFileSync(path.join(packageDir, "llama", "llama.cpp.info.json"), "utf8")) as { tag: string }
    ).tag;
    if (release !== bundled)
      return { reason: `${name} is built from llama.cpp ${release}, the sources are ${bundled}` };
    if (meta.buildOptions.gpu !== false) return { reason: `${name} is a GPU build` };
    const files = fs.readdirSync(dir);
    const missing = [`libllama.${release}.so`, `libggml.${release}.so`, "libggml-base.so", "libllama-common.so"].filter(
      (f) => !files.includes(f),
    );
    if (!files.some((f) => /^libggml-cpu.*\.so$/.test(f))) missing.push("libggml-cpu*.so");
    if (missing.length > 0) return { reason: `${name} lacks ${missing.join(", ")}` };
    return { dir, release };
  } catch (e) {
    return { reason: `${name}: ${(e as Error).message}` };
  }
}

/** Which way a patched build is made for this mode: "addon" whenever the prebuilt libraries allow it. */
export function buildStrategy(
  mode: Exclude<EngineBuildMode, "prebuilt">,
  packageDir = nodeLlamaCppDir(),
): { strategy: "addon"; prebuilt: PrebuiltLibraries } | { strategy: "source"; why: string } {
  if (mode === "source") return { strategy: "source", why: "GANTRY_ENGINE_BUILD=source" };
  const prebuilt = prebuiltLibraries(packageDir);
  return "reason" in prebuilt ? { strategy: "source", why: prebuilt.reason } : { strategy: "addon", prebuilt };
}

/**
 * The GPU backend a patched build runs on besides the CPU. "cuda": the CPU build ("addon" strategy, whose ggml loads
 * its backends at run time) with a CUDA backend module, libggml-cuda.so, built from the same llama.cpp source for the
 * machine's GPU (server/setup/cuda-engine.ts), as node-llama-cpp's own CUDA package is the CPU one plus that module.
 */
export type PatchedGpu = "cuda";

export interface PatchedBuild {
  /** Cache key: node-llama-cpp version, platform, and a hash of the patch, options and builder. */
  key: string;
  /** $GANTRY_CACHE/engine/<key>: status.json, build.log and the build folder. */
  dir: string;
  /** node-llama-cpp's local build folder name for these options. */
  folder: string;
  /** dir/folder: what llama/localBuilds/<folder> links to. */
  buildDir: string;
  /** llama/localBuilds/<folder> inside the installed package. */
  linkPath: string;
  cmakeOptions: Readonly<Record<string, string>>;
  strategy: EngineBuildStrategy;
  /** "addon": the libraries it links against. */
  prebuilt?: PrebuiltLibraries;
  /** "source": why not "addon". */
  sourceReason?: string;
  /** "source": the CPU target of llama.cpp and ggml ("addon" builds use the prebuilt's run-time CPU dispatch). */
  cpuTarget: EngineCpuTarget;
  nodeLlamaCppVersion: string;
  /** The GPU backend it loads (false: the CPU only). */
  gpu: PatchedGpu | false;
}

export function patchedBuild(opts: {
  cacheDir: string;
  cpuTarget: EngineCpuTarget;
  /** "prebuilt" counts as "auto": the build that mode would make. */
  mode: EngineBuildMode;
  packageDir?: string;
  /** Without image input (NLC_MTMD off): the build the A/B benchmark compares the current one with. */
  withoutMtmd?: boolean;
  /** The CUDA engine: the CPU build's key with "-cuda", the folder getLlama({ gpu: "cuda" }) looks in. */
  gpu?: PatchedGpu | false;
}): PatchedBuild {
  const packageDir = opts.packageDir ?? nodeLlamaCppDir();
  const cpuTarget = opts.cpuTarget;
  const mode = opts.mode === "source" ? "source" : "auto";
  const choice = buildStrategy(mode, packageDir);
  const version = nodeLlamaCppVersion(packageDir);
  const platform = nlcPlatform();
  let key: string, cmakeOptions: Readonly<Record<string, string>>;
  const patched = opts.withoutMtmd
    ? Object.fromEntries(Object.entries(PATCHED_CMAKE_OPTIONS).filter(([k]) => k !== "NLC_MTMD"))
    : PATCHED_CMAKE_OPTIONS;
  if (choice.strategy === "addon") {
    cmakeOptions = { ...patched, ...ADDON_CMAKE_OPTIONS };
    const digest = createHash("sha256")
      .update(fs.readFileSync(PATCH_FILE))
      .update(fs.readFileSync(PREBUILT_LLAMA_CMAKE))
      .update(JSON.stringify(cmakeOptions))
      .update(String(BUILDER_VERSION))
      .digest("hex")
      .slice(0, 12);
    key = `node-llama-cpp-${version}-${platform}-${process.arch}-addon-${digest}`;
  } else {
    cmakeOptions = patched;
    const digest = createHash("sha256")
      .update(fs.readFileSync(PATCH_FILE))
      .update(JSON.stringify(patched))
      .update(String(BUILDER_VERSION))
      // The native target hashes as before (nothing added), so existing native builds stay valid.
      .update(cpuTarget === "native" ? "" : JSON.stringify(CPU_TARGET_CMAKE_OPTIONS[cpuTarget]))
      .digest("hex")
      .slice(0, 12);
    key = `node-llama-cpp-${version}-${platform}-${process.arch}${cpuTarget === "native" ? "" : `-${cpuTarget}`}-${digest}`;
  }
  const gpu = opts.gpu ?? false;
  if (gpu) key = `${key}-${gpu}`;
  const dir = path.join(opts.cacheDir, "engine", key);
  const { folder } = localBuildFolderName(cmakeOptions, platform, process.arch, gpu);
  return {
    key,
    dir,
    folder,
    buildDir: path.join(dir, folder),
    linkPath: path.join(packageDir, "llama", "localBuilds", folder),
    cmakeOptions,
    strategy: choice.strategy,
    ...(choice.strategy === "addon" ? { prebuilt: choice.prebuilt } : { sourceReason: choice.why }),
    cpuTarget,
    nodeLlamaCppVersion: version,
    gpu,
  };
}

/** What the last setup run recorded in <dir>/status.json. */
export type BuildStatus =
  | { state: "built"; seconds: number; builtAt: string }
  | { state: "failed"; reason: string; log: string; failedAt: string };

export function readBuildStatus(build: PatchedBuild): BuildStatus | undefined {
  try {
    const status = JSON.parse(fs.readFileSync(path.join(build.dir, "status.json"), "utf8")) as BuildStatus;
    if (status.state === "built" && !isCompleteBuild(build.buildDir)) return undefined;
    return status;
  } catch {
    return undefined;
  }
}

/** The files node-llama-cpp requires of a local build folder. */
export function isCompleteBuild(buildDir: string): boolean {
  return ["Release/llama-addon.node", "Release/_nlcBuildMetadata.json", "buildDone.status"].every((f) =>
    fs.existsSync(path.join(buildDir, f)),
  );
}

/**
 * Makes llama/localBuilds/<folder> in the installed package point at the cached build (npm install may have removed
 * the link). Returns an error message instead of throwing (read-only installs, for example).
 */
export function linkLocalBuild(build: PatchedBuild): string | undefined {
  try {
    const current = fs.readlinkSync(build.linkPath, { encoding: "utf8" });
    if (current === build.buildDir) return undefined;
  } catch {
    // missing, or not a link
  }
  try {
    fs.mkdirSync(path.dirname(build.linkPath), { recursive: true });
    fs.rmSync(build.linkPath, { recursive: true, force: true });
    const tmp = `${build.linkPath}.${process.pid}.tmp`;
    fs.symlinkSync(build.buildDir, tmp, "dir");
    fs.renameSync(tmp, build.linkPath);
    return undefined;
  } catch (e) {
    return `cannot link ${build.linkPath} to ${build.buildDir}: ${(e as Error).message}`;
  }
}
