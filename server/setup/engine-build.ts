// `node server/setup/engine-build.ts [--strict]` — run by server/setup/env.sh on every setup; ensurePatchedEngine() is
// the same from code. Builds the patched node-llama-cpp addon (server/engine/native/node-llama-cpp-addon.patch) once
// into $GANTRY_CACHE/engine/<key> (outside the repo) and links it where node-llama-cpp's getLlama looks for local
// builds. The patch changes only the addon, so by default only the addon is compiled, against the llama.cpp/ggml
// libraries of the installed prebuilt package (same llama.cpp release; server/setup/prebuilt-llama-cpp.cmake stands in
// for llama.cpp's CMakeLists; llama.cpp's tools/mtmd, the image input, is compiled from the bundled sources into the
// addon): about 145 CPU-seconds. GANTRY_ENGINE_BUILD=source (or no compatible prebuilt package) compiles llama.cpp
// and ggml too, tuned per GANTRY_ENGINE_CPU, and tools/mtmd into the addon the same way (the patch's CMakeLists adds it
// in both cases; a build without it is refused, see addonLacks). Warm runs only check and re-link (under a second).
// Without build tools, or when the build fails, the server uses the prebuilt binary and says so; --strict (the test
// command, image builds) fails instead. GANTRY_ENGINE_BUILD=prebuilt skips the build; GANTRY_ENGINE_REBUILD=1 retries a
// build that failed before.
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import {
  CPU_TARGET_CMAKE_OPTIONS,
  isCompleteBuild,
  linkLocalBuild,
  localBuildFolderName,
  nlcPlatform,
  nodeLlamaCppDir,
  PATCH_FILE,
  PREBUILT_LLAMA_CMAKE,
  patchedBuild,
  readBuildStatus,
  type BuildStatus,
  type EngineBuildMode,
  type EngineBuildStrategy,
  type PatchedBuild,
  type PrebuiltLibraries,
} from "../engine/native/patched-build.ts";
import { parseEnv, processEnvironment } from "../common/config.ts";
import { withDirLock } from "../common/dir-lock.ts";
import { SetupEnvSchema, type SetupEnv } from "./config.ts";
import { applyPatch, buildTools, bundledRelease, cloneBundledLlamaCpp, cmakeBuild } from "./llama-source.ts";

const log = (msg: string): void => {
  process.stderr.write(`gantry-setup: engine: ${msg}\n`);
};

/**
 * node-llama-cpp's build metadata for a local build (what its compileLlamaCpp writes next to the binary); `gpu` is the
 * backend getLlama expects it to load ("cuda" for the CUDA engine, cuda-engine.ts).
 */
export async function buildMetadata(
  build: PatchedBuild,
  packageDir: string,
  sourceDir?: string,
  gpu: false | "cuda" = false,
): Promise<object> {
  const release = await bundledRelease(packageDir, sourceDir);
  return {
    buildOptions: {
      customCmakeOptions: build.cmakeOptions,
      progressLogs: true,
      platform: nlcPlatform(),
      platformInfo: platformInfo(),
      arch: process.arch,
      gpu,
      llamaCpp: { repo: release.repo, release: release.release },
    },
  };
}

/** As node-llama-cpp's getPlatformInfo: when it matches at load time, getLlama skips test-loading the binary. */
function platformInfo(): { name: string; version: string } {
  if (process.platform !== "linux")
    return { name: process.platform === "darwin" ? "macOS" : "Unknown", version: os.release() };
  for (const file of ["/etc/os-release", "/usr/lib/os-release"]) {
    try {
      const kv = new Map(
        fs
          .readFileSync(file, "utf8")
          .split("\n")
          .filter((l) => l.indexOf("=") > 0)
          .map(
            (l) =>
              [
                l.slice(0, l.indexOf("=")).toLowerCase(),
                l.slice(l.indexOf("=") + 1).replace(/^"(.*)"$/, "$1"),
              ] as const,
          ),
      );
      return { name: kv.get("name") ?? "", version: kv.get("version_id") ?? kv.get("version") ?? "" };
    } catch {
      // next
    }
  }
  return { name: "", version: "" };
}

function copyOutputs(from: string, to: string): number {
  let n = 0;
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const p = path.join(from, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "CMakeFiles") n += copyOutputs(p, to);
    } else if (/\.node$|\.so(\.\d+)*$|\.dylib$/.test(entry.name)) {
      fs.cpSync(p, path.join(to, entry.name), { dereference: true });
      n++;
    }
  }
  return n;
}

/** Makes the build's source tree (once per key): node-llama-cpp's addon sources, llama.cpp, both patches applied. */
async function prepareSources(
  build: PatchedBuild,
  work: string,
  logFile: string,
  say: (line: string) => void,
  settings: SetupEnv,
): Promise<string> {
  const packageDir = nodeLlamaCppDir();
  const src = path.join(work, "src");
  if (fs.existsSync(path.join(src, ".gantry-ready"))) return src;
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(src, { recursive: true });
  for (const item of ["CMakeLists.txt", "addon", "cmake", "package.json"]) {
    fs.cpSync(path.join(packageDir, "llama", item), path.join(src, item), { recursive: true });
  }
  const sourceDir = settings.GANTRY_LLAMA_CPP_SOURCE;
  say(sourceDir ? `copying llama.cpp from ${sourceDir}` : "cloning llama.cpp from the package's git bundle");
  await cloneBundledLlamaCpp(path.join(src, "llama.cpp"), { packageDir, log: logFile, sourceDir });
  await applyPatch(src, PATCH_FILE, logFile, settings.PATH);
  if (build.strategy === "addon") {
    // llama.cpp's own CMakeLists would build llama.cpp and ggml; the stub defines their targets as the prebuilt
    // libraries.
    const lists = path.join(src, "llama.cpp", "CMakeLists.txt");
    fs.renameSync(lists, path.join(src, "llama.cpp", "CMakeLists.source.txt"));
    fs.copyFileSync(PREBUILT_LLAMA_CMAKE, lists);
  }
  fs.writeFileSync(path.join(src, ".gantry-ready"), "");
  return src;
}

/**
 * Copies the prebuilt package's shared libraries into the build tree (the stub links them there, so the addon's
 * RUNPATH is $ORIGIN and the output folder gets them next to the addon); refuses libraries built with OpenMP, under
 * which the patch's threadpool would not run graphs.
 */
function stagePrebuiltLibraries(prebuilt: PrebuiltLibraries, buildDir: string): void {
  fs.mkdirSync(buildDir, { recursive: true });
  for (const f of fs.readdirSync(prebuilt.dir).filter((f) => /\.so(\.\d+)*$/.test(f))) {
    const data = fs.readFileSync(path.join(prebuilt.dir, f));
    if (data.includes("libgomp.so"))
      throw new Error(`the prebuilt ${f} uses OpenMP: GANTRY_ENGINE_BUILD=source builds llama.cpp without it`);
    fs.writeFileSync(path.join(buildDir, f), data);
  }
}

async function compile(
  build: PatchedBuild,
  logFile: string,
  say: (line: string) => void,
  settings: SetupEnv,
): Promise<void> {
  const packageDir = nodeLlamaCppDir();
  const work = `${build.dir}.work`;
  const src = await prepareSources(build, work, logFile, say, settings);
  const buildTree = path.join(work, "build");
  const release = await bundledRelease(packageDir, settings.GANTRY_LLAMA_CPP_SOURCE);
  const req = createRequire(path.join(packageDir, "package.json"));
  const nodeApiHeaders = (req("node-api-headers") as { include_dir: string }).include_dir;
  const nodeAddonApi = path.dirname(req.resolve("node-addon-api/package.json"));
  const platform = `${nlcPlatform()}-${process.arch}`;
  // What node-llama-cpp's compileLlamaCpp passes for a CPU build (cmake-js supplies the CMAKE_JS_* ones).
  const addonOptions = {
    CMAKE_JS_VERSION: "gantry",
    CMAKE_JS_INC: `${nodeApiHeaders};${nodeAddonApi}`,
    CMAKE_JS_SRC: "",
    CMAKE_JS_LIB: "",
    NODE_RUNTIME: "node",
    NODE_ARCH: process.arch,
    NLC_CURRENT_PLATFORM: platform,
    NLC_TARGET_PLATFORM: platform,
    NLC_VARIANT: localBuildFolderName(build.cmakeOptions).binVariant(release.release),
  };
  let strategyOptions: Record<string, string>;
  if (build.strategy === "addon") {
    stagePrebuiltLibraries(build.prebuilt!, buildTree);
    strategyOptions = { GANTRY_PREBUILT_DIR: buildTree, GANTRY_PREBUILT_RELEASE: build.prebuilt!.release };
  } else {
    strategyOptions = {
      GGML_BUILD_NUMBER: "1",
      GGML_METAL: "OFF",
      GGML_CCACHE: "OFF",
      LLAMA_CURL: "OFF",
      LLAMA_HTTPLIB: "OFF",
      LLAMA_BUILD_BORINGSSL: "OFF",
      LLAMA_OPENSSL: "OFF",
      ...CPU_TARGET_CMAKE_OPTIONS[build.cpuTarget],
    };
  }
  say(`compiling (log: ${logFile})`);
  await cmakeBuild({
    src,
    build: buildTree,
    targets: ["llama-addon"],
    log: logFile,
    toolchain: settings,
    // The addon's CMakeLists asks node for node-addon-api's path; the copy lives outside node_modules. cmake and the
    // compilers inherit the rest of the environment: child-process env construction.
    env: { ...processEnvironment(), NODE_PATH: path.dirname(packageDir) },
    options: { ...addonOptions, ...strategyOptions, ...build.cmakeOptions },
  });
  const out = `${build.dir}.tmp`;
  fs.rmSync(out, { recursive: true, force: true });
  const releaseDir = path.join(out, build.folder, "Release");
  fs.mkdirSync(releaseDir, { recursive: true });
  if (copyOutputs(buildTree, releaseDir) === 0 || !fs.existsSync(path.join(releaseDir, "llama-addon.node"))) {
    throw new Error("the build produced no llama-addon.node");
  }
  const lacks = addonLacks(path.join(releaseDir, "llama-addon.node"), build.cmakeOptions);
  if (lacks.length > 0) throw new Error(`the built llama-addon.node lacks ${lacks.join(" and ")}`);
  fs.writeFileSync(
    path.join(releaseDir, "_nlcBuildMetadata.json"),
    JSON.stringify(await buildMetadata(build, packageDir, settings.GANTRY_LLAMA_CPP_SOURCE)),
  );
  fs.writeFileSync(path.join(out, build.folder, "buildDone.status"), "");
  fs.rmSync(build.dir, { recursive: true, force: true });
  fs.renameSync(out, build.dir);
  fs.rmSync(work, { recursive: true, force: true });
}

/**
 * What the built addon lacks of the patch, by the names it registers with Node: the settings binding, sequence state,
 * pooled outputs per sequence, batched sampling, and image input
 * when the build has NLC_MTMD on (whichever way llama.cpp was built: a build that silently lost mtmd must not be
 * cached as the patched engine).
 */
export function addonLacks(addonFile: string, cmakeOptions: Readonly<Record<string, string>>): string[] {
  const binary = fs.readFileSync(addonFile);
  const wanted: Array<[string, string]> = [
    ["setGantrySettings", "the settings binding (setGantrySettings)"],
    ["setSequenceState", "sequence state in host memory (setSequenceState)"],
    ["getSequenceEmbedding", "pooled outputs per sequence (getSequenceEmbedding)"],
    ["sampleTokens", "a step's rows sampled in one call (sampleTokens)"],
  ];
  if (cmakeOptions.NLC_MTMD === "ON") wanted.push(["AddonMtmdContext", "image input (AddonMtmdContext)"]);
  return wanted.filter(([name]) => !binary.includes(name)).map(([, what]) => what);
}

export function writeStatus(build: PatchedBuild, status: BuildStatus): void {
  fs.mkdirSync(build.dir, { recursive: true });
  fs.writeFileSync(path.join(build.dir, "status.json"), JSON.stringify(status, null, 2));
}

export interface EngineSetupResult {
  /** ready: the patched addon is built and linked (the runtime loads it); prebuilt: the runtime uses the package's. */
  state: "ready" | "prebuilt";
  detail: string;
}

export interface EnsureEngineOptions {
  /**
   * The patched addon is required (the test command, container images): anything but "ready" rejects with what to do,
   * and a build that failed before is retried. GANTRY_ENGINE_BUILD=prebuilt still builds nothing and resolves.
   */
  strict?: boolean;
  /** Progress lines (default: stderr, as "gantry-setup: engine: …"). */
  log?: (line: string) => void;
  /** Overrides GANTRY_ENGINE_BUILD (the benchmarks make both kinds of build). */
  mode?: EngineBuildMode;
  /** The setup's settings (server/setup/config.ts), parsed by the entry point. */
  settings: SetupEnv;
  /** The build without image input (NLC_MTMD off), for the A/B benchmark of text generation (bench/addon-ab.ts). */
  withoutMtmd?: boolean;
}

/**
 * CPU seconds one build takes on the 2-core test machine (AVX-512, GCC 12): "addon" about 145 (72 s wall on idle cores,
 * mostly llama.cpp's tools/mtmd compiled into the addon), "source" about 480 more for llama.cpp and ggml.
 */
const BUILD_CPU_SECONDS: Record<EngineBuildStrategy, number> = { addon: 145, source: 625 };

/**
 * The expected wall time of a build: its CPU seconds over the cores, and, when other work keeps the machine busy,
 * over this build's share of them (its `cores` compiler jobs among the load average's runnable processes).
 */
export function expectedBuildTime(
  strategy: EngineBuildStrategy,
  cores = os.availableParallelism(),
  load = os.loadavg()[0]!,
): string {
  const fmt = (s: number) => (s < 90 ? `${Math.max(10, Math.round(s / 10) * 10)} s` : `${Math.round(s / 60)} minutes`);
  const idle = BUILD_CPU_SECONDS[strategy] / cores;
  const busy = idle * Math.max(1, (load + cores) / cores);
  const base = `about ${fmt(idle)} on ${cores} idle core${cores === 1 ? "" : "s"}`;
  return busy > idle * 1.5 ? `${base}, ${fmt(busy)} at this machine's current load (${load.toFixed(1)})` : base;
}

const TOOLS_HINT =
  "install them (Debian/Ubuntu: apt-get install cmake g++ git ninja-build; Fedora: dnf install cmake gcc-c++ git ninja-build; macOS: xcode-select --install && brew install cmake)";

/**
 * Ensures the patched addon is built (once per cache key, under a lock: concurrent callers build it once) and linked
 * where node-llama-cpp's getLlama finds it. Without `strict` it never throws for build problems: the result says the
 * prebuilt binary will be used and why. Called by setup (env.sh) and by anything that needs the engine first (the CLI).
 */
export async function ensurePatchedEngine(opts: EnsureEngineOptions): Promise<EngineSetupResult> {
  const { settings } = opts;
  const say = opts.log ?? log;
  // Without the patched build: the prebuilt binary, or (strict) an error.
  const fallback = (reason: string): EngineSetupResult => {
    if (!opts.strict)
      return { state: "prebuilt", detail: `${reason}; using the prebuilt binary (no persistent threadpool, slower)` };
    throw new Error(`the patched engine build is required here: ${reason}`);
  };
  const mode = opts.mode ?? settings.GANTRY_ENGINE_BUILD;
  if (mode === "prebuilt")
    return { state: "prebuilt", detail: "GANTRY_ENGINE_BUILD=prebuilt: not building the patched addon" };
  if (process.platform === "win32") return fallback("building the patched addon is not supported on Windows");
  const started = performance.now();
  const build = patchedBuild({
    mode,
    cacheDir: settings.GANTRY_CACHE,
    cpuTarget: settings.GANTRY_ENGINE_CPU,
    ...(opts.withoutMtmd ? { withoutMtmd: true } : {}),
  });
  const ready = (how: string): EngineSetupResult => {
    const linkError = linkLocalBuild(build);
    if (linkError) return { state: "ready", detail: `${how}, but ${linkError}` };
    return { state: "ready", detail: `${how} (${build.buildDir})` };
  };
  const status = readBuildStatus(build);
  if (status?.state === "built")
    return ready(
      `patched addon ready, cached (checked in ${((performance.now() - started) / 1000).toFixed(2)} s; built once in ${status.seconds} s)`,
    );
  if (status?.state === "failed" && !settings.GANTRY_ENGINE_REBUILD && !opts.strict) {
    return fallback(
      `the patched addon build failed before (${status.reason}; log: ${status.log}), GANTRY_ENGINE_REBUILD=1 retries it`,
    );
  }
  const tools = buildTools(settings);
  if (!tools.ok) return fallback(`cannot build the patched addon: missing ${tools.missing.join(", ")}; ${TOOLS_HINT}`);

  return withDirLock(
    `${build.dir}.lock`,
    async () => {
      const again = readBuildStatus(build);
      if (again?.state === "built") return ready("patched addon built by another setup");
      const logFile = path.join(path.dirname(build.dir), `${build.key}.build.log`);
      fs.mkdirSync(path.dirname(logFile), { recursive: true });
      fs.writeFileSync(logFile, `building ${build.key}\n`);
      const what =
        build.strategy === "addon"
          ? `against the prebuilt package's llama.cpp ${build.prebuilt!.release} libraries`
          : `with llama.cpp and ggml from the package's bundled sources (${build.cpuTarget} CPU target; ${build.sourceReason})`;
      say(
        `building the patched node-llama-cpp ${build.nodeLlamaCppVersion} addon (persistent threadpool, inline sampling and decoding, penalty prefilter, direct top k${opts.withoutMtmd ? "" : ", image input"}) ${what}, once: ${expectedBuildTime(build.strategy)}`,
      );
      try {
        await compile(build, logFile, say, settings);
      } catch (e) {
        const reason = (e as Error).message.split("\n")[0]!;
        writeStatus(build, { state: "failed", reason, log: logFile, failedAt: new Date().toISOString() });
        process.stderr.write(`${(e as Error).message}\n`);
        return fallback(
          `building the patched addon failed (${reason}; log: ${logFile}${build.strategy === "addon" ? "; GANTRY_ENGINE_BUILD=source builds llama.cpp from source too" : ""})`,
        );
      }
      const seconds = Math.round((performance.now() - started) / 1000);
      fs.renameSync(logFile, path.join(build.dir, "build.log"));
      writeStatus(build, { state: "built", seconds, builtAt: new Date().toISOString() });
      if (!isCompleteBuild(build.buildDir))
        return fallback(`the patched addon build is incomplete in ${build.buildDir}`);
      return ready(`patched addon built in ${seconds} s (cold setup cost)`);
    },
    { pollMs: 2000, onWait: () => say("waiting for another setup that is building it") },
  );
}

if (import.meta.main) {
  // --strict (the test command, container image builds): fail unless the patched addon is ready, instead of falling
  // back to the prebuilt binary.
  try {
    const settings = parseEnv(SetupEnvSchema);
    const result = await ensurePatchedEngine({ strict: process.argv.includes("--strict"), settings });
    log(result.detail);
  } catch (e) {
    log((e as Error).message);
    process.exitCode = 1;
  }
}
