// Flags every platform command shares (--org, --context, --kubeconfig, --output, --base-url) and the cluster client
// they lead to. @kubernetes/client-node is loaded only here, on use: it would slow every other command's start.
import type { AppsClient } from "../platform/apps-client.ts";
import type { CliConfig } from "../platform/cli-config.ts";
import { stringFlag, UsageError, type FlagSpec, type ParsedArgs } from "./args.ts";
import type { CliContext } from "./context.ts";

export const TARGET_FLAGS: Record<string, FlagSpec> = {
  org: { type: "string" },
  context: { type: "string" },
  kubeconfig: { type: "string" },
  output: { type: "string", short: "o" },
  "base-url": { type: "string" },
};

export const TARGET_HELP = `  --org <org>            the org (a namespace; default: the config file's, else the context's namespace)
  --context <name>       kubeconfig context (default: the config file's, else the current one)
  --kubeconfig <file>    kubeconfig file (default: KUBECONFIG, else ~/.kube/config)
  --base-url <url>       the gateway's public URL: apps are at {base-url}/<org>/<app> (default: the config
                         file's baseUrl, else the URL the operator reports)
  -o, --output json      machine-readable output
Defaults live in ~/.config/gantry/config.yaml (context, org, baseUrl).
`;

export type OutputFormat = "text" | "json";

export function outputFormat(flags: ParsedArgs["flags"], allowed: readonly string[] = ["text", "json"]): string {
  const o = stringFlag(flags.output) ?? "text";
  if (!allowed.includes(o)) throw new UsageError(`--output must be ${allowed.join(" or ")}, not "${o}"`);
  return o;
}

export interface PlatformTarget {
  client: AppsClient;
  config: CliConfig;
  /** --base-url, else the config file's. */
  baseUrl: string | undefined;
}

export async function platformTarget(flags: ParsedArgs["flags"], ctx: CliContext): Promise<PlatformTarget> {
  const baseUrl = stringFlag(flags["base-url"]);
  if (baseUrl !== undefined && !URL.canParse(baseUrl)) throw new UsageError(`--base-url "${baseUrl}" is not a URL`);
  const { loadCliConfig } = await import("../platform/cli-config.ts");
  const { connect } = await import("../platform/kube-target.ts");
  const { AppsClient } = await import("../platform/apps-client.ts");
  const config = loadCliConfig(ctx.config);
  const target = connect(
    { kubeconfig: stringFlag(flags.kubeconfig), context: stringFlag(flags.context), org: stringFlag(flags.org) },
    config,
    ctx.config,
  );
  return { client: new AppsClient(target), config, baseUrl: baseUrl ?? config.baseUrl };
}
