// The engine build the tests load and check: the one the test command's environment selects (GANTRY_ENGINE_BUILD,
// GANTRY_CACHE, GANTRY_ENGINE_CPU), parsed as `gantry serve` parses them; and the GPU backend in-process engines use
// (GANTRY_GPU; the CPU unless it is set, as the GPU bundle's run.sh sets it to run these tests on a GPU).
import { z } from "zod";
import { parseEnv } from "../../server/common/config.ts";
import { ServerConfigSchema } from "../../server/config.ts";
import { GPU_SETTINGS, type GpuSetting } from "../../server/engine/gpu.ts";
import { engineBuildSettings, type EngineBuildSettings } from "../../server/engine/native/patched-build.ts";

const BuildEnvSchema = ServerConfigSchema.pick({
  GANTRY_ENGINE_BUILD: true,
  GANTRY_CACHE: true,
  GANTRY_ENGINE_CPU: true,
});

export const testEngineBuild = (): EngineBuildSettings => engineBuildSettings(parseEnv(BuildEnvSchema));

const GpuEnvSchema = z.object({ GANTRY_GPU: z.enum(GPU_SETTINGS).default("off") });

export const testGpu = (): GpuSetting => parseEnv(GpuEnvSchema).GANTRY_GPU;
