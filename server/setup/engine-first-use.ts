// The engine check of the `gantry` command itself, so an installed gantry (npm install -g, npx) sets its engine up as a
// checkout's setup does: before the first model server starts, the patched node-llama-cpp addon is built once (a
// progress line, minutes) or, without a compiler, the prebuilt binary is used and that is said once. Later commands
// find the build cached and print nothing. The one call into the engine's build step is ensurePatchedEngine.
import fs from "node:fs";
import path from "node:path";
import { patchedBuild, readBuildStatus, type PatchedBuild } from "../engine/native/patched-build.ts";
import type { SetupEnv } from "./config.ts";
import { ensurePatchedEngine } from "./engine-build.ts";

/**
 * With a GPU backend named setup builds nothing: the runtime uses the patched CUDA engine where the GPU bundle's run.sh
 * made one (cuda-engine.ts), else node-llama-cpp's prebuilt binary for that backend (llama-runtime.ts decides).
 */
const GPU_BACKENDS = new Set(["cuda", "vulkan", "metal"]);

/**
 * Ensures the engine is ready before a server starts. Says (through `say`, stderr) what it did only when it built
 * something, or once per distinct fallback reason; never throws (the server falls back to the prebuilt binary).
 */
export async function ensureEngineOnFirstUse(say: (line: string) => void, settings: SetupEnv): Promise<void> {
  const mode = settings.GANTRY_ENGINE_BUILD;
  if (mode === "prebuilt" || GPU_BACKENDS.has(settings.GANTRY_GPU)) return;
  const buildOf = () => patchedBuild({ mode, cacheDir: settings.GANTRY_CACHE, cpuTarget: settings.GANTRY_ENGINE_CPU });
  let result: { state: "ready" | "prebuilt"; detail: string }, builtBefore: boolean;
  try {
    builtBefore = readBuildStatus(buildOf())?.state === "built";
    result = await ensurePatchedEngine({ settings });
  } catch (e) {
    builtBefore = false;
    result = {
      state: "prebuilt",
      detail: `the engine check failed (${(e as Error).message}): using the prebuilt binary`,
    };
  }
  if (result.state === "ready") {
    if (!builtBefore) say(`gantry: engine: ${result.detail}`); // built just now (its progress lines came before)
    return;
  }
  if (!notedBefore(result.detail, buildOf)) say(`gantry: engine: ${result.detail}`);
}

/** Whether this fallback was reported before; records it otherwise (an unwritable cache: said again next time). */
function notedBefore(detail: string, buildOf: () => PatchedBuild): boolean {
  let file: string;
  try {
    const build = buildOf();
    file = path.join(path.dirname(build.dir), `${build.key}.prebuilt-notice`);
  } catch {
    return false;
  }
  try {
    if (fs.readFileSync(file, "utf8") === detail) return true;
  } catch {
    // not noted yet
  }
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, detail);
  } catch {
    // read-only cache: nothing to remember it in
  }
  return false;
}
