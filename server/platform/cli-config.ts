// The platform commands' defaults (deploy, apps, keys): ~/.config/gantry/config.yaml ($XDG_CONFIG_HOME/gantry/…;
// GANTRY_CONFIG names another file). Flags win over the file; the file wins over the kubeconfig.
//
//   context: prod            # kubeconfig context (default: the kubeconfig's current context)
//   org: acme                # org = namespace (default: the context's namespace, else "default")
//   baseUrl: https://gantry.example.com   # the gateway's public URL: apps are {baseUrl}/<org>/<app>
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError } from "../common/config.ts";
import { DNS_LABEL } from "../common/kube-names.ts";

export const CliConfigSchema = z
  .object({
    context: z.string().min(1).optional().describe("kubeconfig context of the platform commands"),
    kubeconfig: z.string().min(1).optional().describe("kubeconfig file (else KUBECONFIG, else ~/.kube/config)"),
    org: z.string().max(63).regex(DNS_LABEL, "must be a DNS label").optional().describe("default org (namespace)"),
    baseUrl: z.url().optional().describe("the gateway's public base URL: an app is at {baseUrl}/<org>/<app>"),
  })
  .strict();
export type CliConfig = z.infer<typeof CliConfigSchema>;

/** The variables that locate the file, parsed by the CLI's config schema (server/cli/config.ts). */
export interface CliConfigEnv {
  GANTRY_CONFIG?: string | undefined;
  XDG_CONFIG_HOME?: string | undefined;
}

export function cliConfigPath(env: CliConfigEnv): string {
  if (env.GANTRY_CONFIG) return env.GANTRY_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config");
  return path.join(base, "gantry", "config.yaml");
}

/** The config file's settings ({} when there is none); a file that is there must be valid. */
export function loadCliConfig(env: CliConfigEnv): CliConfig {
  const file = cliConfigPath(env);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" && !env.GANTRY_CONFIG) return {};
    throw new ConfigError([`cannot read ${file}: ${(e as Error).message}`]);
  }
  let input: unknown;
  try {
    input = parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError([`${file}: ${(e as Error).message.split("\n")[0]}`]);
  }
  const r = CliConfigSchema.safeParse(input);
  if (!r.success)
    throw new ConfigError(r.error.issues.map((i) => `${file}: ${i.path.join(".") || "(root)"}: ${i.message}`));
  const config = r.data;
  if (config.kubeconfig?.startsWith("~/")) config.kubeconfig = path.join(os.homedir(), config.kubeconfig.slice(2));
  return config;
}
