// The environment variables `gantry operator` reads: one zod schema, parsed once at start (every invalid variable
// listed at once) and listed by `gantry operator --help`. The rest of its configuration is the config file
// (operator/config.ts), which GANTRY_OPERATOR_LISTEN and GANTRY_OPERATOR_NAMESPACE override.
import { z } from "zod";
import { SharedSettings } from "../server/common/config.ts";

export const OperatorEnvSchema = z.object({
  GANTRY_OPERATOR_LISTEN: z
    .string()
    .optional()
    .describe("Overrides the config file's listen: address of /healthz, /readyz, /metrics and the load-report API"),
  GANTRY_OPERATOR_NAMESPACE: z
    .string()
    .optional()
    .describe("Overrides the config file's watchNamespace: reconcile only this namespace"),
  GANTRY_LOG_LEVEL: SharedSettings.GANTRY_LOG_LEVEL,
  POD_NAME: SharedSettings.POD_NAME,
  POD_NAMESPACE: SharedSettings.POD_NAMESPACE,
  KUBECONFIG: SharedSettings.KUBECONFIG,
  KUBERNETES_SERVICE_HOST: SharedSettings.KUBERNETES_SERVICE_HOST,
});

export type OperatorEnv = z.infer<typeof OperatorEnvSchema>;
