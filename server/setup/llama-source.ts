// llama.cpp's source as node-llama-cpp ships it, turned into a source tree outside node_modules without network: the
// package carries its llama.cpp release as a git bundle (llama/gitRelease.bundle), the patches it applies to it
// (llama/patches/*.diff) and its addon sources (llama/addon). Used to build the patched addon (engine-build.ts) and
// llama.cpp's own tools for side-by-side benchmarks (test/bench/llama-cpp/tools.ts). A GPU bundle (test/gpu/) carries
// the same tree unpacked instead of the git bundle (GANTRY_LLAMA_CPP_SOURCE: node-llama-cpp's patches applied, what no
// build needs left out, its release in SOURCE_INFO), so a machine without git builds from it.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { processEnvironment, type Environment } from "../common/config.ts";
import { nodeLlamaCppDir } from "../engine/native/patched-build.ts";
import type { SetupEnv } from "./config.ts";

export interface BundledRelease {
  repo: string;
  /** node-llama-cpp's name for the release (llama.cpp.info.json `tag`). */
  release: string;
  /** The commit the bundle holds. */
  commit: string;
}

export function bundlePath(packageDir = nodeLlamaCppDir()): string {
  return path.join(packageDir, "llama", "gitRelease.bundle");
}

/** The file of an unpacked source tree (GANTRY_LLAMA_CPP_SOURCE) that names its release: a BundledRelease as JSON. */
export const SOURCE_INFO = ".gantry-source.json";

/**
 * The llama.cpp release the builds use: an unpacked tree's (`sourceDir`, from GANTRY_LLAMA_CPP_SOURCE) when given, else
 * the package's git bundle's.
 */
export async function bundledRelease(packageDir = nodeLlamaCppDir(), sourceDir?: string): Promise<BundledRelease> {
  if (sourceDir) return JSON.parse(fs.readFileSync(path.join(sourceDir, SOURCE_INFO), "utf8")) as BundledRelease;
  const info = JSON.parse(fs.readFileSync(path.join(packageDir, "llama", "llama.cpp.info.json"), "utf8")) as {
    tag: string;
    llamaCppGithubRepo: string;
  };
  const heads = await run("git", ["bundle", "list-heads", bundlePath(packageDir)], { capture: true });
  const commit = /^([0-9a-f]{40})\s/m.exec(heads)?.[1];
  if (!commit) throw new Error(`no commit in ${bundlePath(packageDir)}`);
  return { repo: info.llamaCppGithubRepo, release: info.tag, commit };
}

/**
 * Clones the bundle into `dest` (which must not exist yet) and applies node-llama-cpp's own llama.cpp patches; or
 * copies an unpacked tree (`sourceDir`), which has them applied.
 */
export async function cloneBundledLlamaCpp(
  dest: string,
  opts: { packageDir?: string; log?: string; sourceDir?: string | undefined } = {},
): Promise<void> {
  if (opts.sourceDir) {
    fs.cpSync(opts.sourceDir, dest, { recursive: true });
    return;
  }
  const packageDir = opts.packageDir ?? nodeLlamaCppDir();
  await run("git", ["clone", "--quiet", bundlePath(packageDir), dest], { log: opts.log });
  const patchesDir = path.join(packageDir, "llama", "patches");
  const patches = fs.existsSync(patchesDir)
    ? fs
        .readdirSync(patchesDir)
        .filter((f) => f.endsWith(".diff"))
        .sort()
    : [];
  for (const p of patches) await applyPatch(dest, path.join(patchesDir, p), opts.log);
}

/**
 * Applies a unified diff in `dir` with git apply (or GNU patch where `searchPath`, a PATH value, has no git, as on a
 * bare GPU machine), unless it is already applied (then it is left alone).
 */
export async function applyPatch(dir: string, patchFile: string, log?: string, searchPath?: string): Promise<void> {
  // GIT_CEILING_DIRECTORIES keeps git from treating an enclosing repository (a cache inside a checkout) as the target.
  // git inherits the rest of the environment (PATH, HOME, git's own settings): child-process env construction.
  const env = { ...processEnvironment(), GIT_CEILING_DIRECTORIES: path.dirname(path.resolve(dir)) };
  const withGit = searchPath === undefined || which(searchPath, "git") !== undefined;
  const [check, apply] = withGit
    ? [
        ["git", "apply", "--reverse", "--check", patchFile],
        ["git", "apply", "--whitespace=nowarn", patchFile],
      ]
    : [
        ["patch", "-p1", "--reverse", "--dry-run", "--force", "--silent", "-i", patchFile],
        ["patch", "-p1", "--forward", "-i", patchFile],
      ];
  const applied = await run(check[0]!, check.slice(1), { cwd: dir, env }).then(
    () => true,
    () => false,
  );
  if (!applied) await run(apply[0]!, apply.slice(1), { cwd: dir, env, log });
}

export interface RunOptions {
  cwd?: string;
  /** The child's whole environment (default: this process's, passed through). */
  env?: Environment;
  /** Append the command and its output to this file. */
  log?: string | undefined;
  /** Return stdout instead of logging it. */
  capture?: boolean;
}

/** Runs a command; rejects with its exit code and the end of its output. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? processEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const logFd = opts.log ? fs.openSync(opts.log, "a") : undefined;
    if (logFd !== undefined)
      fs.writeSync(logFd, `\n$ ${[cmd, ...args].join(" ")}${opts.cwd ? `   (in ${opts.cwd})` : ""}\n`);
    let out = "",
      tail = "";
    const onData = (d: Buffer, isStdout: boolean) => {
      const s = d.toString();
      if (opts.capture && isStdout) out += s;
      else if (logFd !== undefined) fs.writeSync(logFd, s);
      tail = (tail + s).slice(-4000);
    };
    child.stdout.on("data", (d: Buffer) => onData(d, true));
    child.stderr.on("data", (d: Buffer) => onData(d, false));
    child.once("error", (e) => {
      if (logFd !== undefined) fs.closeSync(logFd);
      reject(e);
    });
    child.once("close", (code) => {
      if (logFd !== undefined) fs.closeSync(logFd);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.slice(0, 3).join(" ")} exited with ${code}:\n${tail.trim()}`));
    });
  });
}

/** The variables that choose the build tools (from the setup's config schema, server/setup/config.ts). */
export type Toolchain = Pick<SetupEnv, "PATH" | "CC" | "CXX">;

/** The first of `names` found on `searchPath` (a PATH value), or undefined. */
export function which(searchPath: string, ...names: string[]): string | undefined {
  for (const name of names) {
    for (const dir of searchPath.split(path.delimiter)) {
      if (!dir) continue;
      const p = path.join(dir, name);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        return p;
      } catch {
        // next
      }
    }
  }
  return undefined;
}

/**
 * The tools a CMake build of llama.cpp needs, or what is missing. git clones the package's bundle; from an unpacked
 * tree (GANTRY_LLAMA_CPP_SOURCE) GNU patch does for applying the addon patch.
 */
export function buildTools(
  tc: Toolchain & { GANTRY_LLAMA_CPP_SOURCE?: string | undefined },
): { ok: true; cmake: string; generator: string[] } | { ok: false; missing: string[] } {
  const cmake = which(tc.PATH, "cmake");
  const cxx = tc.CXX || which(tc.PATH, "c++", "g++", "clang++");
  const cc = tc.CC || which(tc.PATH, "cc", "gcc", "clang");
  const git = which(tc.PATH, "git") ?? (tc.GANTRY_LLAMA_CPP_SOURCE ? which(tc.PATH, "patch") : undefined);
  const ninja = which(tc.PATH, "ninja");
  const make = which(tc.PATH, "make");
  const missing = [
    !cmake && "cmake",
    !cxx && "a C++ compiler",
    !cc && "a C compiler",
    !git && (tc.GANTRY_LLAMA_CPP_SOURCE ? "git or patch" : "git"),
    !ninja && !make && "ninja or make",
  ].filter((m): m is string => !!m);
  if (missing.length > 0 || !cmake) return { ok: false, missing };
  return { ok: true, cmake, generator: ninja ? ["-G", "Ninja"] : ["-G", "Unix Makefiles"] };
}

/** Configures (once) and builds `targets` of the CMake project in `src` into `build`, Release, output in `log`. */
export async function cmakeBuild(o: {
  src: string;
  build: string;
  options: Record<string, string>;
  targets: string[];
  log: string;
  toolchain: Toolchain;
  /** cmake's whole environment (default: this process's, passed through: compilers read CC, CXX, PATH themselves). */
  env?: Environment;
  jobs?: number;
}): Promise<void> {
  const tools = buildTools(o.toolchain);
  if (!tools.ok) throw new Error(`missing build tools: ${tools.missing.join(", ")}`);
  const env = o.env ?? processEnvironment();
  if (!fs.existsSync(path.join(o.build, "CMakeCache.txt"))) {
    const defs = Object.entries({ CMAKE_BUILD_TYPE: "Release", ...o.options }).map(([k, v]) => `-D${k}=${v}`);
    await run(tools.cmake, ["-S", o.src, "-B", o.build, ...tools.generator, "--no-warn-unused-cli", ...defs], {
      env,
      log: o.log,
    });
  }
  const jobs = o.jobs ?? os.availableParallelism();
  await run(
    tools.cmake,
    ["--build", o.build, "--config", "Release", "--parallel", String(jobs), "--target", ...o.targets],
    { env, log: o.log },
  );
}
