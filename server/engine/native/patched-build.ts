// Identity and location of the patched node-llama-cpp addon (persistent threadpool, inline sampling, image input
// through llama.cpp's mtmd; see node-llama-cpp-addon.patch):
// the CMake options it is built with, the cache directory it lives in (outside the repo, keyed by the node-llama-cpp
// version, the platform and a hash of the patch and options) and the folder name under which node-llama-cpp's
// getLlama({ build: "never", cmakeOptions }) looks for it (llama/localBuilds/<folder> inside the package).
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PATCH_FILE = path.join(import.meta.dirname, "node-llama-cpp-addon.patch");

/**
 * The build's CMake options beyond node-llama-cpp's own defaults. They are also passed to getLlama, which derives the
 * local build's folder name from them. OpenMP is off so ggml's own threadpool (the one the patch attaches) runs graphs.
 */
export const PATCHED_CMAKE_OPTIONS: Readonly<Record<string, string>> = {
  GGML_OPENMP: "OFF",
  NLC_THREADPOOL: "ON",
  NLC_INLINE_SAMPLING: "ON",
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

export function engineCpuTarget(env: NodeJS.ProcessEnv = process.env): EngineCpuTarget {
  const v = env.GANTRY_ENGINE_CPU ?? "native";
  if (v === "" || v === "native") return "native";
  if (v === "portable") return v;
  throw new Error(`GANTRY_ENGINE_CPU must be "native" or "portable", not ${JSON.stringify(v)}`);
}

/** Bump when the way the build is made changes (not the patch: its content is hashed). */
const BUILDER_VERSION = 1;

/** The installed node-llama-cpp package directory. */
export function nodeLlamaCppDir(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))), "..");
}

export function nodeLlamaCppVersion(dir = nodeLlamaCppDir()): string {
  return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
}

export const gantryCacheDir = (): string => process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");

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
 * The folder name node-llama-cpp gives a CPU build with these custom CMake options (getBuildFolderNameForBuildOptions).
 */
export function localBuildFolderName(
  cmakeOptions: Readonly<Record<string, string>>,
  platform = nlcPlatform(),
  arch: string = process.arch,
): { folder: string; binVariant: (release: string) => string } {
  const pairs = Object.keys(cmakeOptions)
    .filter((k) => k !== "")
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(cmakeOptions[k]!)}`);
  if (pairs.length === 0) return { folder: `${platform}-${arch}`, binVariant: (release) => release };
  const hash = nlcHash(pairs.join(";"));
  return { folder: `${platform}-${arch}-${hash}`, binVariant: (release) => `${release}.${hash.slice(0, 8)}` };
}

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
  cpuTarget: EngineCpuTarget;
  nodeLlamaCppVersion: string;
}

export function patchedBuild(
  opts: { cacheDir?: string; packageDir?: string; cpuTarget?: EngineCpuTarget } = {},
): PatchedBuild {
  const packageDir = opts.packageDir ?? nodeLlamaCppDir();
  const cpuTarget = opts.cpuTarget ?? engineCpuTarget();
  const version = nodeLlamaCppVersion(packageDir);
  const platform = nlcPlatform();
  const digest = createHash("sha256")
    .update(fs.readFileSync(PATCH_FILE))
    .update(JSON.stringify(PATCHED_CMAKE_OPTIONS))
    .update(String(BUILDER_VERSION))
    // The native target hashes as before (nothing added), so existing native builds stay valid.
    .update(cpuTarget === "native" ? "" : JSON.stringify(CPU_TARGET_CMAKE_OPTIONS[cpuTarget]))
    .digest("hex")
    .slice(0, 12);
  const key = `node-llama-cpp-${version}-${platform}-${process.arch}${cpuTarget === "native" ? "" : `-${cpuTarget}`}-${digest}`;
  const dir = path.join(opts.cacheDir ?? gantryCacheDir(), "engine", key);
  const { folder } = localBuildFolderName(PATCHED_CMAKE_OPTIONS, platform);
  return {
    key,
    dir,
    folder,
    buildDir: path.join(dir, folder),
    linkPath: path.join(packageDir, "llama", "localBuilds", folder),
    cmakeOptions: PATCHED_CMAKE_OPTIONS,
    cpuTarget,
    nodeLlamaCppVersion: version,
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
