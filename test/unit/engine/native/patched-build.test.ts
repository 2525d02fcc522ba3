import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import {
  engineCpuTarget,
  isCompleteBuild,
  linkLocalBuild,
  localBuildFolderName,
  nodeLlamaCppDir,
  PATCH_FILE,
  PATCHED_CMAKE_OPTIONS,
  patchedBuild,
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
  });

  it("has no hash part without custom options", () => {
    assert.equal(localBuildFolderName({}, "linux", "x64").folder, "linux-x64");
  });
});

describe("patchedBuild", () => {
  it("is keyed by the node-llama-cpp version and lives under the cache, linked from the package's localBuilds", () => {
    const a = patchedBuild({ cacheDir: tmp, packageDir: fakePackage("3.22.1") });
    const b = patchedBuild({ cacheDir: tmp, packageDir: fakePackage("3.23.0") });
    assert.notEqual(a.key, b.key);
    assert.match(a.key, /^node-llama-cpp-3\.22\.1-/);
    assert.equal(path.dirname(a.dir), path.join(tmp, "engine"));
    assert.equal(a.buildDir, path.join(a.dir, a.folder));
    assert.match(a.linkPath, /llama[/\\]localBuilds[/\\]/);
    assert.ok(fs.readFileSync(PATCH_FILE, "utf8").includes("llama_attach_threadpool"));
  });

  it("keys a portable build apart from the native one, in the same folder getLlama looks in", () => {
    const pkg = fakePackage("3.22.1");
    const native = patchedBuild({ cacheDir: tmp, packageDir: pkg, cpuTarget: "native" });
    const portable = patchedBuild({ cacheDir: tmp, packageDir: pkg, cpuTarget: "portable" });
    assert.notEqual(native.dir, portable.dir);
    assert.match(portable.key, /-portable-[0-9a-f]{12}$/);
    assert.equal(native.folder, portable.folder);
    assert.equal(portable.cpuTarget, "portable");
  });

  it("reads the CPU target from GANTRY_ENGINE_CPU and refuses unknown ones", () => {
    assert.equal(engineCpuTarget({}), "native");
    assert.equal(engineCpuTarget({ GANTRY_ENGINE_CPU: "portable" }), "portable");
    assert.throws(
      () => engineCpuTarget({ GANTRY_ENGINE_CPU: "avx512" }),
      /GANTRY_ENGINE_CPU must be "native" or "portable"/,
    );
  });

  it("reports a build as built only when status and files agree", () => {
    const build = patchedBuild({ cacheDir: path.join(tmp, "status"), packageDir: fakePackage("1.0.0") });
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
    const build = patchedBuild({ cacheDir: path.join(tmp, "link"), packageDir: fakePackage("1.0.0") });
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
