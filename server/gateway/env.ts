// The environment variables `gantry gateway` reads: one zod schema, parsed once at start (every invalid variable listed
// at once) and listed by `gantry gateway --help`. The rest of its configuration is the config file
// (server/gateway/config.ts) and the command's flags.
import { z } from "zod";
import { SharedSettings } from "../common/config.ts";

export const GatewayEnvSchema = z.object({
  GANTRY_LOG_LEVEL: SharedSettings.GANTRY_LOG_LEVEL,
  POD_NAME: SharedSettings.POD_NAME,
  KUBECONFIG: SharedSettings.KUBECONFIG,
  KUBERNETES_SERVICE_HOST: SharedSettings.KUBERNETES_SERVICE_HOST,
});

export type GatewayEnv = z.infer<typeof GatewayEnvSchema>;
