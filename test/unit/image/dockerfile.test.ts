// What the image's build stages copy, checked without building them: every file copied from the build context exists
// (the CUDA stages' too, which cannot be built here: no CUDA base image), and the stages that run the engine builds
// with only some of the sources (so that other code changes keep their cached layers) copy every file those builds
// import or read.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { contextFiles, dockerfileStages, importClosure, stage } from "../../support/dockerfile.ts";
import { REPO } from "../../support/server.ts";

const stages = dockerfileStages();

test("the Dockerfile has the stages the image scripts build and copy from", () => {
  assert.deepEqual(
    stages.map((s) => s.name),
    ["deps", "pack", "engine", "app", "cuda-engine", "cuda", "cpu"],
  );
  const names = new Set(stages.map((s) => s.name));
  for (const s of stages)
    for (const c of s.copies) if (c.from) assert.ok(names.has(c.from), `${s.name} copies from ${c.from}`);
});

test("every file a stage copies from the build context exists, the CUDA stages' included", () => {
  for (const s of stages)
    for (const c of s.copies.filter((x) => !x.from))
      for (const src of c.sources) assert.ok(fs.existsSync(path.join(REPO, src)), `${s.name}: ${src}`);
  assert.ok(
    stage("cuda-engine").copies.some((c) => !c.from && c.sources.includes("server/setup/cuda-engine-build.ts")),
  );
});

/** The files a build script needs: its import closure, and the non-TypeScript files it names (a patch, CMake). */
function needed(entry: string): string[] {
  const closure = [...importClosure(entry)];
  const named = closure.flatMap((f) => {
    const text = fs.readFileSync(path.join(REPO, f), "utf8");
    const dir = path.dirname(f);
    return fs
      .readdirSync(path.join(REPO, dir), { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.endsWith(".ts") && text.includes(`"${e.name}"`))
      .map((e) => e.name)
      .map((n) => path.join(dir, n));
  });
  return [...closure, ...named];
}

test("the engine stage copies every source the patched engine's build imports or reads", () => {
  const copied = contextFiles(stage("engine"));
  const want = needed("server/setup/engine-build.ts");
  assert.ok(want.includes("server/engine/native/node-llama-cpp-addon.patch"), "the addon patch is found as read");
  for (const f of want) assert.ok(copied.has(f), `the engine stage lacks ${f}`);
});

test("the CUDA engine stage has every source its build imports (its own copies plus the engine stage's /app)", () => {
  const cudaEngine = stage("cuda-engine");
  assert.ok(cudaEngine.copies.some((c) => c.from === "engine" && c.sources.includes("/app")));
  const copied = new Set([...contextFiles(stage("engine")), ...contextFiles(cudaEngine)]);
  for (const f of needed("server/setup/cuda-engine-build.ts")) assert.ok(copied.has(f), `the CUDA stage lacks ${f}`);
});

test("the runtime stages run as uid 65532 and keep the engine where GANTRY_CACHE points", () => {
  const text = fs.readFileSync(path.join(REPO, "Dockerfile"), "utf8");
  for (const name of ["cpu", "cuda"]) {
    const s = stage(name);
    assert.equal(s.env.GANTRY_CACHE, "/opt/gantry/cache", name);
    assert.ok(
      s.copies.some((c) => c.dest === "/opt/gantry/cache"),
      `${name} copies the engine cache`,
    );
    const body = text.slice(text.indexOf(` AS ${name}\n`)).split("\nFROM ")[0]!;
    assert.match(body, /^USER 65532:65532$/m, name);
  }
});
