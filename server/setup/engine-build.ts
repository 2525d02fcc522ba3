// `node server/setup/engine-build.ts` — run by server/setup/env.sh on every setup. Builds the patched node-llama-cpp
// addon (a persistent ggml threadpool per context, see server/engine/native/node-llama-cpp-addon.patch) from the
// sources the npm package ships, once, into $GANTRY_CACHE/engine/<key> (outside the repo), and links it where
// node-llama-cpp's getLlama looks for local builds. Warm runs only check and re-link (well under a second).
// Never fails the setup: without build tools, or when the build fails, the server uses the prebuilt binary and says so.
// GANTRY_ENGINE_BUILD=prebuilt skips the build; GANTRY_ENGINE_REBUILD=1 retries a build that failed before;
// GANTRY_ENGINE_CPU=portable builds for other machines (container images) instead of this one; --strict fails the
// command unless the patched addon is ready.
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
  patchedBuild,
  readBuildStatus,
  type BuildStatus,
  type PatchedBuild,
} from "../engine/native/patched-build.ts";
import { withDirLock } from "../common/dir-lock.ts";
import { applyPatch, buildTools, bundledRelease, cloneBundledLlamaCpp, cmakeBuild } from "./llama-source.ts";

const log = (msg: string): void => {
  process.stderr.write(`gantry-setup: engine: ${msg}\n`);
};

/** node-llama-cpp's build metadata for a local build (what its compileLlamaCpp writes next to the binary). */
async function buildMetadata(build: PatchedBuild, packageDir: string): Promise<object> {
  const release = await bundledRelease(packageDir);
  return {
    buildOptions: {
      customCmakeOptions: build.cmakeOptions,
      progressLogs: true,
      platform: nlcPlatform(),
      platformInfo: platformInfo(),
      arch: process.arch,
      gpu: false,
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

async function compile(build: PatchedBuild, logFile: string): Promise<void> {
  const packageDir = nodeLlamaCppDir();
  const work = `${build.dir}.work`;
  const src = path.join(work, "src");
  if (!fs.existsSync(path.join(src, ".gantry-ready"))) {
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(src, { recursive: true });
    for (const item of ["CMakeLists.txt", "addon", "cmake", "package.json"]) {
      fs.cpSync(path.join(packageDir, "llama", item), path.join(src, item), { recursive: true });
    }
    log("cloning llama.cpp from the package's git bundle");
    await cloneBundledLlamaCpp(path.join(src, "llama.cpp"), { packageDir, log: logFile });
    await applyPatch(src, PATCH_FILE, logFile);
    fs.writeFileSync(path.join(src, ".gantry-ready"), "");
  }
  const release = await bundledRelease(packageDir);
  const req = createRequire(path.join(packageDir, "package.json"));
  const nodeApiHeaders = (req("node-api-headers") as { include_dir: string }).include_dir;
  const nodeAddonApi = path.dirname(req.resolve("node-addon-api/package.json"));
  const platform = `${nlcPlatform()}-${process.arch}`;
  log(`compiling (log: ${logFile})`);
  await cmakeBuild({
    src,
    build: path.join(work, "build"),
    targets: ["llama-addon"],
    log: logFile,
    // The addon's CMakeLists asks node for node-addon-api's path; the copy lives outside node_modules.
    env: { ...process.env, NODE_PATH: path.dirname(packageDir) },
    // What node-llama-cpp's compileLlamaCpp passes for a native CPU build (cmake-js supplies the CMAKE_JS_* ones).
    options: {
      CMAKE_JS_VERSION: "gantry",
      CMAKE_JS_INC: `${nodeApiHeaders};${nodeAddonApi}`,
      CMAKE_JS_SRC: "",
      CMAKE_JS_LIB: "",
      NODE_RUNTIME: "node",
      NODE_ARCH: process.arch,
      GGML_BUILD_NUMBER: "1",
      NLC_CURRENT_PLATFORM: platform,
      NLC_TARGET_PLATFORM: platform,
      NLC_VARIANT: localBuildFolderName(build.cmakeOptions).binVariant(release.release),
      GGML_METAL: "OFF",
      GGML_CCACHE: "OFF",
      LLAMA_CURL: "OFF",
      LLAMA_HTTPLIB: "OFF",
      LLAMA_BUILD_BORINGSSL: "OFF",
      LLAMA_OPENSSL: "OFF",
      ...CPU_TARGET_CMAKE_OPTIONS[build.cpuTarget],
      ...build.cmakeOptions,
    },
  });
  const out = `${build.dir}.tmp`;
  fs.rmSync(out, { recursive: true, force: true });
  const releaseDir = path.join(out, build.folder, "Release");
  fs.mkdirSync(releaseDir, { recursive: true });
  if (
    copyOutputs(path.join(work, "build"), releaseDir) === 0 ||
    !fs.existsSync(path.join(releaseDir, "llama-addon.node"))
  ) {
    throw new Error("the build produced no llama-addon.node");
  }
  fs.writeFileSync(
    path.join(releaseDir, "_nlcBuildMetadata.json"),
    JSON.stringify(await buildMetadata(build, packageDir)),
  );
  fs.writeFileSync(path.join(out, build.folder, "buildDone.status"), "");
  fs.rmSync(build.dir, { recursive: true, force: true });
  fs.renameSync(out, build.dir);
  fs.rmSync(work, { recursive: true, force: true });
}

function writeStatus(build: PatchedBuild, status: BuildStatus): void {
  fs.mkdirSync(build.dir, { recursive: true });
  fs.writeFileSync(path.join(build.dir, "status.json"), JSON.stringify(status, null, 2));
}

/** Ensures the patched addon is built and linked; returns what happened (never throws for build problems). */
export async function ensurePatchedEngine(): Promise<{ state: "ready" | "prebuilt"; detail: string }> {
  if (process.env.GANTRY_ENGINE_BUILD === "prebuilt")
    return { state: "prebuilt", detail: "GANTRY_ENGINE_BUILD=prebuilt: not building the patched addon" };
  if (process.platform === "win32")
    return {
      state: "prebuilt",
      detail: "building the patched addon is not supported on Windows: using the prebuilt binary",
    };
  const started = performance.now();
  const build = patchedBuild();
  const ready = (how: string): { state: "ready"; detail: string } => {
    const linkError = linkLocalBuild(build);
    if (linkError) return { state: "ready", detail: `${how}, but ${linkError}` };
    return { state: "ready", detail: `${how} (${build.buildDir})` };
  };
  const status = readBuildStatus(build);
  if (status?.state === "built")
    return ready(
      `patched addon ready, cached (checked in ${((performance.now() - started) / 1000).toFixed(2)} s; built once in ${status.seconds} s)`,
    );
  if (status?.state === "failed" && !process.env.GANTRY_ENGINE_REBUILD) {
    return {
      state: "prebuilt",
      detail: `the patched addon build failed before (${status.reason}; log: ${status.log}): using the prebuilt binary. GANTRY_ENGINE_REBUILD=1 retries`,
    };
  }
  const tools = buildTools();
  if (!tools.ok)
    return {
      state: "prebuilt",
      detail: `cannot build the patched addon (missing ${tools.missing.join(", ")}): using the prebuilt binary (no persistent threadpool)`,
    };

  return withDirLock(
    `${build.dir}.lock`,
    async () => {
      const again = readBuildStatus(build);
      if (again?.state === "built") return ready("patched addon built by another setup");
      const logFile = path.join(path.dirname(build.dir), `${build.key}.build.log`);
      fs.mkdirSync(path.dirname(logFile), { recursive: true });
      fs.writeFileSync(logFile, `building ${build.key}\n`);
      log(
        `building the patched node-llama-cpp ${build.nodeLlamaCppVersion} addon (persistent threadpool, inline sampling and decoding, penalty prefilter, direct top k, image input, ${build.cpuTarget} CPU target) from the package's bundled llama.cpp sources, once: a few minutes`,
      );
      try {
        await compile(build, logFile);
      } catch (e) {
        const reason = (e as Error).message.split("\n")[0]!;
        writeStatus(build, { state: "failed", reason, log: logFile, failedAt: new Date().toISOString() });
        process.stderr.write(`${(e as Error).message}\n`);
        return {
          state: "prebuilt",
          detail: `building the patched addon failed (${reason}; log: ${logFile}): using the prebuilt binary (no persistent threadpool)`,
        };
      }
      const seconds = Math.round((performance.now() - started) / 1000);
      fs.renameSync(logFile, path.join(build.dir, "build.log"));
      writeStatus(build, { state: "built", seconds, builtAt: new Date().toISOString() });
      if (!isCompleteBuild(build.buildDir))
        return { state: "prebuilt", detail: `the patched addon build is incomplete in ${build.buildDir}` };
      return ready(`patched addon built in ${seconds} s (cold setup cost)`);
    },
    { pollMs: 2000, onWait: () => log("waiting for another setup that is building it") },
  );
}

if (import.meta.main) {
  // --strict (container image builds): fail unless the patched addon is ready, instead of falling back to the prebuilt.
  const strict = process.argv.includes("--strict");
  const result = await ensurePatchedEngine();
  log(result.detail);
  if (strict && result.state !== "ready" && process.env.GANTRY_ENGINE_BUILD !== "prebuilt") process.exitCode = 1;
}
