// The engine build the tests load and check: the one the test command's environment selects (GANTRY_ENGINE_BUILD,
// GANTRY_CACHE, GANTRY_ENGINE_CPU), parsed as `gantry serve` parses them.
import { parseEnv } from "../../server/common/config.ts";
import { ServerConfigSchema } from "../../server/config.ts";
import { engineBuildSettings, type EngineBuildSettings } from "../../server/engine/native/patched-build.ts";

const BuildEnvSchema = ServerConfigSchema.pick({
  GANTRY_ENGINE_BUILD: true,
  GANTRY_CACHE: true,
  GANTRY_ENGINE_CPU: true,
});

export const testEngineBuild = (): EngineBuildSettings => engineBuildSettings(parseEnv(BuildEnvSchema));
