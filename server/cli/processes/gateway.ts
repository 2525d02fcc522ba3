// `gantry gateway`: runs the gateway (routing, key auth, scale from zero, usage) in front of the ModelApps' pods.
import { envHelp, parseEnv } from "../../common/config.ts";
import { GatewayEnvSchema } from "../../gateway/env.ts";
import { parseArgs, stringFlag, UsageError } from "../args.ts";
import type { Command } from "../context.ts";

export const gatewayCommand: Command = {
  name: "gateway",
  usage:
    "gantry gateway [--config <file>] [--listen host:port] [--operator-url <url>]... [--operator-token-file <file>]",
  group: "platform",
  summary: "Run the gateway: /<org>/<app>/v1/... with Key auth, scale from zero, usage metering",
  details: () =>
    "The config file (YAML) is described in server/gateway/config.ts; the flags override it.\n" +
    "--operator-url may be given once per operator replica (load reports go to each).\n" +
    "--operator-token-file <file>: the ServiceAccount token sent with load reports (operatorTokenFile), e.g. from\n" +
    "  `kubectl create token gantry-gateway -n gantry-system`; in a pod, its own ServiceAccount token is used.\n" +
    "--kubeconfig <file>: without it, KUBECONFIG, ~/.kube/config or the in-cluster service account.\n\n" +
    envHelp("Environment variables", GatewayEnvSchema),
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("gateway", args, {
      config: { type: "string", short: "c" },
      listen: { type: "string" },
      "operator-url": { type: "string", multiple: true },
      "operator-token-file": { type: "string" },
      kubeconfig: { type: "string" },
    });
    if (positionals.length > 0) throw new UsageError(`gateway: unexpected argument "${positionals[0]}"`);
    const configFile = stringFlag(flags.config),
      kubeconfig = stringFlag(flags.kubeconfig),
      listen = stringFlag(flags.listen),
      operatorTokenFile = stringFlag(flags["operator-token-file"]);
    const operatorUrls = (flags["operator-url"] as string[] | undefined) ?? [];
    const env = parseEnv(GatewayEnvSchema, ctx.env);
    const { runGateway } = await import("../../gateway/main.ts"); // client-node is slow to load: only here
    await runGateway({
      ...(configFile ? { configFile } : {}),
      ...(kubeconfig ? { kubeconfig } : {}),
      overrides: {
        ...(listen ? { listen } : {}),
        ...(operatorUrls.length ? { operatorUrls } : {}),
        ...(operatorTokenFile ? { operatorTokenFile } : {}),
      },
      env,
    });
  },
};
