// The variables the `gantry` CLI's client and platform commands read: one zod schema, parsed once in gantry.ts into
// CliContext.config. The process commands (serve, prepare, operator, gateway) parse their own process's schema from
// CliContext.env. `gantry --help` lists these beside the server's.
import { z } from "zod";
import { SharedSettings } from "../common/config.ts";
import { ServerConfigSchema } from "../config.ts";
import { SetupEnvSchema } from "../setup/config.ts";

/** GANTRY_HOST and GANTRY_MODELS (the server's), the engine setup's (`gantry run` may start one), the platform's. */
export const CliEnvSchema = ServerConfigSchema.pick({ GANTRY_HOST: true, GANTRY_MODELS: true }).extend({
  ...SetupEnvSchema.shape,
  GANTRY_CONFIG: z
    .string()
    .optional()
    .describe(
      "The platform commands' config file (context, org, baseUrl; default $XDG_CONFIG_HOME/gantry/config.yaml)",
    ),
  XDG_CONFIG_HOME: z.string().optional().describe("Base of the default GANTRY_CONFIG (default ~/.config)"),
  KUBECONFIG: SharedSettings.KUBECONFIG,
  KUBERNETES_SERVICE_HOST: SharedSettings.KUBERNETES_SERVICE_HOST,
});

export type CliEnv = z.infer<typeof CliEnvSchema>;

/** Every variable of the CLI's schema that `gantry serve` does not read too (for `gantry --help`). */
export const CliOnlyEnvSchema = CliEnvSchema.pick({
  GANTRY_CONFIG: true,
  XDG_CONFIG_HOME: true,
  KUBECONFIG: true,
  KUBERNETES_SERVICE_HOST: true,
});
