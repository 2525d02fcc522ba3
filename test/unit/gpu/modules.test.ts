import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { bundleFiles, moduleClosure, resolveIn, type PackageLock } from "../../gpu/modules.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-modules-test-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const lock: PackageLock = {
  packages: {
    "node_modules/app": { version: "1.0.0", dependencies: { lib: "^2", shared: "^1" } },
    "node_modules/app/node_modules/lib": { version: "2.0.0", dependencies: { shared: "^1" } },
    "node_modules/lib": { version: "1.0.0" },
    "node_modules/shared": {
      version: "1.0.0",
      peerDependencies: { ts: "*", peer: "*" },
      peerDependenciesMeta: { ts: { optional: true } },
    },
    "node_modules/ts": { version: "5.0.0" },
    "node_modules/peer": { version: "1.0.0" },
    "node_modules/node-llama-cpp": {
      version: "3.22.1",
      optionalDependencies: {
        "@node-llama-cpp/linux-x64": "3.22.1",
        "@node-llama-cpp/linux-x64-cuda": "3.22.1",
        "@node-llama-cpp/linux-arm64": "3.22.1",
        "@node-llama-cpp/mac-arm64-metal": "3.22.1",
      },
    },
    "node_modules/@node-llama-cpp/linux-x64": { os: ["linux"], cpu: ["x64"] },
    "node_modules/@node-llama-cpp/linux-x64-cuda": { os: ["linux"], cpu: ["x64"] },
    "node_modules/@node-llama-cpp/linux-arm64": { os: ["linux"], cpu: ["arm64", "x64"] },
    "node_modules/@node-llama-cpp/mac-arm64-metal": { os: ["darwin"], cpu: ["arm64"] },
    "node_modules/kube": { version: "1.0.0" },
  },
};

test("packages resolve as Node resolves them: the nearest node_modules first, then each enclosing one", () => {
  assert.equal(resolveIn(lock, "node_modules/app", "lib"), "node_modules/app/node_modules/lib");
  assert.equal(resolveIn(lock, "node_modules/app/node_modules/lib", "shared"), "node_modules/shared");
  assert.equal(resolveIn(lock, "", "lib"), "node_modules/lib");
  assert.equal(resolveIn(lock, "", "missing"), undefined);
});

test("the closure: dependencies and required peers, node-llama-cpp's CPU binaries for this platform only", () => {
  const all = moduleClosure(lock, ["app", "node-llama-cpp"], () => true, "linux-x64");
  assert.deepEqual(all, [
    "node_modules/@node-llama-cpp/linux-x64",
    "node_modules/app",
    "node_modules/app/node_modules/lib",
    "node_modules/node-llama-cpp",
    "node_modules/peer",
    "node_modules/shared",
  ]);
  // What is not installed is not carried; a required dependency missing from the lock is an error.
  assert.ok(!moduleClosure(lock, ["app"], (p) => p !== "node_modules/peer", "linux-x64").includes("node_modules/peer"));
  assert.throws(() => moduleClosure(lock, ["nothing"], () => true), /nothing \(needed by the project\)/);
});

test("the files carried: what Node loads, not declarations, maps, sources or the llama.cpp git bundle", () => {
  const put = (f: string) => {
    fs.mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
    fs.writeFileSync(path.join(tmp, f), "x");
  };
  for (const f of [
    "node_modules/app/index.js",
    "node_modules/app/index.d.ts",
    "node_modules/app/index.js.map",
    "node_modules/app/src/index.ts",
    "node_modules/app/README.md",
    "node_modules/app/LICENSE.md",
    "node_modules/app/node_modules/lib/lib.mjs",
    "node_modules/app/node_modules/other/other.js",
    "node_modules/node-llama-cpp/dist/index.js",
    "node_modules/node-llama-cpp/llama/gitRelease.bundle",
    "node_modules/node-llama-cpp/llama/addon/addon.cpp",
    "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/x.node",
  ])
    put(f);
  const files = bundleFiles(tmp, [
    "node_modules/app",
    "node_modules/app/node_modules/lib",
    "node_modules/node-llama-cpp",
  ]);
  assert.deepEqual(files.sort(), [
    "node_modules/app/LICENSE.md",
    "node_modules/app/index.js",
    "node_modules/app/node_modules/lib/lib.mjs",
    "node_modules/node-llama-cpp/dist/index.js",
    "node_modules/node-llama-cpp/llama/addon/addon.cpp",
  ]);
});
