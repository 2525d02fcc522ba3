import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { parseEnv, type ConfigError } from "../../../../server/common/config.ts";
import { ServerConfigSchema } from "../../../../server/config.ts";
import {
  buildStrategy,
  engineBuildSettings,
  isCompleteBuild,
  linkLocalBuild,
  localBuildFolderName,
  nodeLlamaCppDir,
  PATCH_FILE,
  PATCHED_CMAKE_OPTIONS,
  patchedBuild,
  prebuiltLibraries,
  readBuildStatus,
} from "../../../../server/engine/native/patched-build.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "patched-build-test-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fake installed package: package.json only (the build's key reads its version). */
function fakePackage(version: string): string {
  const dir = fs.mkdtempSync(path.join(tmp, "pkg-"));
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "node-llama-cpp", version }));
  return dir;
}

const platformArch = `${process.platform === "darwin" ? "mac" : process.platform}-${process.arch}`;

/**
 * A fake install: node-llama-cpp (version, bundled llama.cpp release) and its prebuilt CPU package beside it in
 * node_modules, with the given metadata and library files; returns node-llama-cpp's directory.
 */
function fakeInstall(
  o: {
    version?: string;
    prebuiltVersion?: string | null;
    release?: string;
    gpu?: string | false;
    libs?: string[];
  } = {},
): string {
  const modules = path.join(fs.mkdtempSync(path.join(tmp, "install-")), "node_modules");
  const nlc = path.join(modules, "node-llama-cpp");
  fs.mkdirSync(path.join(nlc, "llama"), { recursive: true });
  fs.writeFileSync(
    path.join(nlc, "package.json"),
    JSON.stringify({ name: "node-llama-cpp", version: o.version ?? "3.22.1" }),
  );
  fs.writeFileSync(path.join(nlc, "llama", "llama.cpp.info.json"), JSON.stringify({ tag: "v0.5.0" }));
  if (o.prebuiltVersion === null) return nlc;
  const pkg = path.join(modules, "@node-llama-cpp", platformArch);
  const bins = path.join(pkg, "bins", platformArch);
  fs.mkdirSync(bins, { recursive: true });
  fs.mkdirSync(path.join(pkg, "dist"));
  fs.writeFileSync(path.join(pkg, "dist", "index.js"), "");
  fs.writeFileSync(
    path.join(pkg, "package.json"),
    JSON.stringify({
      name: `@node-llama-cpp/${platformArch}`,
      version: o.prebuiltVersion ?? "3.22.1",
      main: "dist/index.js",
    }),
  );
  fs.writeFileSync(
    path.join(bins, "_nlcBuildMetadata.json"),
    JSON.stringify({ buildOptions: { gpu: o.gpu ?? false, llamaCpp: { release: o.release ?? "v0.5.0" } } }),
  );
  const libs = o.libs ?? [
    "libllama.v0.5.0.so",
    "libllama-common.so",
    "libggml.v0.5.0.so",
    "libggml-base.so",
    "libggml-cpu-x64.so",
  ];
  for (const f of ["llama-addon.node", ...libs]) fs.writeFileSync(path.join(bins, f), "");
  return nlc;
}

describe("build strategy", () => {
  const linux = process.platform === "linux";

  it("compiles only the addon against a matching prebuilt package (Linux), with a key and getLlama folder of its own", () => {
    const nlc = fakeInstall();
    const choice = buildStrategy("auto", nlc);
    if (!linux) {
      // The macOS packages are Metal builds: the patched CPU build compiles llama.cpp too there.
      assert.deepEqual(choice, { strategy: "source", why: `no prebuilt CPU libraries to link on ${process.platform}` });
      return;
    }
    assert.equal(choice.strategy, "addon");
    assert.equal(choice.strategy === "addon" && choice.prebuilt.release, "v0.5.0");
    const addon = patchedBuild({ cacheDir: tmp, packageDir: nlc, mode: "auto", cpuTarget: "native" });
    const source = patchedBuild({ cacheDir: tmp, packageDir: nlc, mode: "source", cpuTarget: "native" });
    assert.equal(addon.strategy, "addon");
    assert.match(addon.key, /^node-llama-cpp-3\.22\.1-linux-[a-z0-9]+-addon-[0-9a-f]{12}$/);
    assert.equal(addon.cmakeOptions.GANTRY_PREBUILT_LIBS, "ON");
    assert.notEqual(addon.folder, source.folder, "both can be linked at once");
    // The CPU target is the prebuilt's run-time choice: one addon build serves both settings.
    assert.equal(patchedBuild({ cacheDir: tmp, packageDir: nlc, mode: "auto", cpuTarget: "portable" }).key, addon.key);
  });

  it("builds from source, keyed as before, when asked or when the prebuilt package does not match", () => {
    const cases: Array<[Parameters<typeof fakeInstall>[0], RegExp]> = [
      [{ prebuiltVersion: null }, /is not installed/],
      [{ prebuiltVersion: "3.21.0" }, /is 3\.21\.0, node-llama-cpp 3\.22\.1/],
      [{ release: "b1234" }, /built from llama\.cpp b1234, the sources are v0\.5\.0/],
      [{ gpu: "cuda" }, /is a GPU build/],
      [
        { libs: ["libllama.v0.5.0.so", "libggml-base.so"] },
        /lacks libggml\.v0\.5\.0\.so, libllama-common\.so, libggml-cpu\*\.so/,
      ],
    ];
    for (const [install, why] of cases) {
      const nlc = fakeInstall(install);
      const build = patchedBuild({ cacheDir: tmp, packageDir: nlc, mode: "auto", cpuTarget: "native" });
      assert.equal(build.strategy, "source", JSON.stringify(install));
      if (linux) assert.match(build.sourceReason!, why);
      assert.match(build.key, /^node-llama-cpp-3\.22\.1-[a-z]+-[a-z0-9]+-[0-9a-f]{12}$/);
      assert.deepEqual(build.cmakeOptions, PATCHED_CMAKE_OPTIONS);
    }
    const asked = patchedBuild({ cacheDir: tmp, packageDir: fakeInstall(), mode: "source", cpuTarget: "native" });
    assert.equal(asked.strategy, "source");
    assert.equal(asked.sourceReason, "GANTRY_ENGINE_BUILD=source");
  });

  it("finds the installed prebuilt package's libraries (on Linux)", () => {
    const found = prebuiltLibraries();
    if (!linux) return assert.ok("reason" in found);
    assert.ok("dir" in found, JSON.stringify(found));
    assert.ok(fs.existsSync(path.join(found.dir, `libllama.${found.release}.so`)));
  });
});

describe("localBuildFolderName", () => {
  it("matches node-llama-cpp's own folder naming for custom CMake options", async () => {
    // node-llama-cpp's internal module (not exported): the folder getLlama looks in must be the one we build into.
    const internal = pathToFileURL(
      path.join(nodeLlamaCppDir(), "dist", "bindings", "utils", "getBuildFolderNameForBuildOptions.js"),
    ).href;
    const { getBuildFolderNameForBuildOptions } = (await import(internal)) as {
      getBuildFolderNameForBuildOptions(o: object): Promise<{ withCustomCmakeOptions: string; binVariant: string }>;
    };
    const release = JSON.parse(
      fs.readFileSync(path.join(nodeLlamaCppDir(), "llama", "binariesGithubRelease.json"), "utf8"),
    ).release as string;
    const theirs = await getBuildFolderNameForBuildOptions({
      customCmakeOptions: new Map(Object.entries(PATCHED_CMAKE_OPTIONS)),
      platform: "linux",
      arch: "x64",
      gpu: false,
      llamaCpp: { repo: "ggml-org/llama.cpp", release },
    });
    const ours = localBuildFolderName(PATCHED_CMAKE_OPTIONS, "linux", "x64");
    assert.equal(ours.folder, theirs.withCustomCmakeOptions);
    assert.equal(ours.binVariant(release), theirs.binVariant);
    // The CUDA engine's folder: where getLlama({ gpu: "cuda", cmakeOptions }) looks.
    const theirsCuda = await getBuildFolderNameForBuildOptions({
      customCmakeOptions: new Map(Object.entries(PATCHED_CMAKE_OPTIONS)),
      platform: "linux",
      arch: "x64",
      gpu: "cuda",
      llamaCpp: { repo: "ggml-org/llama.cpp", release },
    });
    const oursCuda = localBuildFolderName(PATCHED_CMAKE_OPTIONS, "linux", "x64", "cuda");
    assert.equal(oursCuda.folder, theirsCuda.withCustomCmakeOptions);
    assert.equal(oursCuda.binVariant(release), theirsCuda.binVariant);
    assert.match(oursCuda.folder, /^linux-x64-cuda-/);
  });

  it("has no hash part without custom options", () => {
    assert.equal(localBuildFolderName({}, "linux", "x64").folder, "linux-x64");
  });
});

describe("patchedBuild", () => {
  it("is keyed by the node-llama-cpp version and lives under the cache, linked from the package's localBuilds", () => {
    const a = patchedBuild({ cacheDir: tmp, packageDir: fakePackage("3.22.1"), mode: "auto", cpuTarget: "native" });
    const b = patchedBuild({ cacheDir: tmp, packageDir: fakePackage("3.23.0"), mode: "auto", cpuTarget: "native" });
    assert.notEqual(a.key, b.key);
    assert.match(a.key, /^node-llama-cpp-3\.22\.1-/);
    assert.equal(path.dirname(a.dir), path.join(tmp, "engine"));
    assert.equal(a.buildDir, path.join(a.dir, a.folder));
    assert.match(a.linkPath, /llama[/\\]localBuilds[/\\]/);
    assert.ok(fs.readFileSync(PATCH_FILE, "utf8").includes("llama_attach_threadpool"));
  });

  it("keys the CUDA engine after its CPU build, in the folder getLlama looks in for CUDA", () => {
    const pkg = fakePackage("3.22.1");
    const cpu = patchedBuild({ cacheDir: tmp, packageDir: pkg, mode: "auto", cpuTarget: "native" });
    const cuda = patchedBuild({ cacheDir: tmp, packageDir: pkg, mode: "auto", cpuTarget: "native", gpu: "cuda" });
    assert.equal(cuda.key, `${cpu.key}-cuda`);
    assert.deepEqual(cuda.cmakeOptions, cpu.cmakeOptions);
    assert.equal(cuda.folder, cpu.folder.replace(platformArch, `${platformArch}-cuda`));
    assert.equal([cpu.gpu, cuda.gpu].join(), "false,cuda");
  });

  it("keys a portable source build apart from the native one, in the same folder getLlama looks in", () => {
    const pkg = fakePackage("3.22.1");
    const native = patchedBuild({ cacheDir: tmp, packageDir: pkg, cpuTarget: "native", mode: "source" });
    const portable = patchedBuild({ cacheDir: tmp, packageDir: pkg, cpuTarget: "portable", mode: "source" });
    assert.notEqual(native.dir, portable.dir);
    assert.match(portable.key, /-portable-[0-9a-f]{12}$/);
    assert.equal(native.folder, portable.folder);
    assert.equal(portable.cpuTarget, "portable");
  });

  it("takes its settings from the server's schema, which refuses unknown ones", () => {
    const parse = (env: Record<string, string>) => engineBuildSettings(parseEnv(ServerConfigSchema, env));
    assert.deepEqual(parse({}), {
      mode: "auto",
      cacheDir: path.join(os.homedir(), ".cache", "gantry"),
      cpuTarget: "native",
    });
    assert.deepEqual(parse({ GANTRY_ENGINE_BUILD: "source", GANTRY_CACHE: tmp, GANTRY_ENGINE_CPU: "portable" }), {
      mode: "source",
      cacheDir: tmp,
      cpuTarget: "portable",
    });
    assert.throws(
      () => parse({ GANTRY_ENGINE_BUILD: "fast", GANTRY_ENGINE_CPU: "avx512" }),
      (e: ConfigError) => {
        assert.equal(e.issues.length, 2);
        return true;
      },
    );
  });

  it("reports a build as built only when status and files agree", () => {
    const build = patchedBuild({
      cacheDir: path.join(tmp, "status"),
      packageDir: fakePackage("1.0.0"),
      mode: "auto",
      cpuTarget: "native",
    });
    assert.equal(readBuildStatus(build), undefined);
    fs.mkdirSync(build.dir, { recursive: true });
    fs.writeFileSync(path.join(build.dir, "status.json"), JSON.stringify({ state: "built", seconds: 1, builtAt: "x" }));
    assert.equal(readBuildStatus(build), undefined, "files missing");
    fs.mkdirSync(path.join(build.buildDir, "Release"), { recursive: true });
    for (const f of ["Release/llama-addon.node", "Release/_nlcBuildMetadata.json", "buildDone.status"])
      fs.writeFileSync(path.join(build.buildDir, f), "");
    assert.equal(isCompleteBuild(build.buildDir), true);
    assert.equal(readBuildStatus(build)?.state, "built");
    fs.writeFileSync(
      path.join(build.dir, "status.json"),
      JSON.stringify({ state: "failed", reason: "no", log: "l", failedAt: "x" }),
    );
    assert.equal(readBuildStatus(build)?.state, "failed");
  });
});

describe("linkLocalBuild", () => {
  it("creates the link, keeps a correct one and replaces a stale one", () => {
    const build = patchedBuild({
      cacheDir: path.join(tmp, "link"),
      packageDir: fakePackage("1.0.0"),
      mode: "auto",
      cpuTarget: "native",
    });
    fs.mkdirSync(build.buildDir, { recursive: true });
    assert.equal(linkLocalBuild(build), undefined);
    assert.equal(fs.readlinkSync(build.linkPath), build.buildDir);
    assert.equal(linkLocalBuild(build), undefined);
    fs.rmSync(build.linkPath);
    fs.symlinkSync(tmp, build.linkPath);
    assert.equal(linkLocalBuild(build), undefined);
    assert.equal(fs.readlinkSync(build.linkPath), build.buildDir);
  });
});
