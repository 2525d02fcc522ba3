// `gantry operator`: runs the ModelApp operator. The CLI is the composition root of every gantry process, so this is
// the one place under server/ that reaches into operator/ beyond its API (rule server-imports-only-operator-api).
import { envHelp, parseEnv } from "../../common/config.ts";
import { OperatorEnvSchema } from "../../../operator/env.ts";
import { parseArgs, stringFlag, UsageError } from "../args.ts";
import type { Command } from "../context.ts";

export const operatorCommand: Command = {
  group: "platform",
  name: "operator",
  usage: "gantry operator [--config <file>] [--kubeconfig <file>]",
  summary: "Run the Kubernetes operator that turns ModelApps into model-server pods",
  details: () =>
    "The config file (YAML) is described in operator/config.ts; in a cluster the Helm chart renders it.\n" +
    "Without --kubeconfig it uses KUBECONFIG, ~/.kube/config or the in-cluster service account.\n\n" +
    envHelp("Environment variables", OperatorEnvSchema),
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("operator", args, {
      config: { type: "string", short: "c" },
      kubeconfig: { type: "string" },
    });
    if (positionals.length > 0) throw new UsageError(`operator: unexpected argument "${positionals[0]}"`);
    const configFile = stringFlag(flags.config),
      kubeconfig = stringFlag(flags.kubeconfig);
    const env = parseEnv(OperatorEnvSchema, ctx.env);
    const { runOperator } = await import("../../../operator/main.ts"); // client-node is slow to load: only here
    await runOperator({ ...(configFile ? { configFile } : {}), ...(kubeconfig ? { kubeconfig } : {}), env });
  },
};
