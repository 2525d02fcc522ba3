// The settings catalogue's shared part: every process declares the environment variables it reads in one zod schema
// (server/config.ts, server/cli/config.ts, server/setup/config.ts, server/gateway/env.ts, operator/env.ts), parses it
// once at start with parseEnv (every invalid variable listed at once; empty strings count as unset) and prints it in
// --help with envHelp. This module is where the process's environment is read (ESLint's no-restricted-properties
// allows process.env only in the catalogue's modules); everything else receives values, never the environment.
import { z } from "zod";

export type Environment = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {
  readonly issues: string[];
  constructor(issues: string[]) {
    super(`invalid configuration:\n  ${issues.join("\n  ")}`);
    this.issues = issues;
    this.name = "ConfigError";
  }
}

/**
 * The process's environment as it was started with: for parseEnv, and for a child process that must inherit the
 * whole environment (PATH, HOME, proxies; `gantry serve` started in the background). No variable is read from it
 * anywhere but through a schema.
 */
export const processEnvironment = (): Environment => process.env;

export function parseEnv<S extends z.ZodObject>(schema: S, env: Environment = processEnvironment()): z.infer<S> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") input[key] = v;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map(
        (i) =>
          `${i.path.join(".")}: ${i.message}${input[String(i.path[0])] !== undefined ? ` (got "${input[String(i.path[0])]}")` : ""}`,
      ),
    );
  }
  return parsed.data;
}

/** A variable's default as --help shows it (undefined when it has none). */
export function envDefault(field: z.ZodType): string | undefined {
  const r = field.safeParse(undefined);
  if (!r.success || r.data === undefined || r.data === "") return undefined;
  return Array.isArray(r.data) ? r.data.join(",") : String(r.data);
}

/** Lines for `--help`: every variable of a schema with its description and default. */
export function describeEnv(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape).map(([key, s]) => {
    const field = s as z.ZodType;
    const def = envDefault(field);
    return `  ${key.padEnd(28)} ${field.description ?? ""}${def === undefined ? "" : ` (default: ${def})`}`;
  });
}

/** A `--help` section: a title line, then every variable of the schema. */
export const envHelp = (title: string, schema: z.ZodObject): string => `${title}:\n${describeEnv(schema).join("\n")}\n`;

/** An on/off switch: 1/true/yes/on or 0/false/no/off. */
export const envFlag = () =>
  z
    .enum(["1", "true", "yes", "on", "0", "false", "no", "off"], { error: "must be 1/true/yes/on or 0/false/no/off" })
    .transform((v) => ["1", "true", "yes", "on"].includes(v));

/**
 * Variables more than one process reads, declared once here and picked into each process's schema. (Those of the model
 * server that the CLI and setup also read are picked from server/config.ts.)
 */
export const SharedSettings = {
  GANTRY_LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("Log level"),
  KUBECONFIG: z
    .string()
    .optional()
    .describe(
      "Kubeconfig file(s), separated by the path delimiter as kubectl merges them (without --kubeconfig; else ~/.kube/config, else the pod's service account)",
    ),
  KUBERNETES_SERVICE_HOST: z
    .string()
    .optional()
    .describe("Set by Kubernetes in every pod: the process runs in a cluster (in-cluster credentials)"),
  POD_NAME: z
    .string()
    .optional()
    .describe("This pod's name (the chart sets it from the downward API): the identity in leases and load reports"),
  POD_NAMESPACE: z
    .string()
    .optional()
    .describe("This pod's namespace (the chart sets it from the downward API; else the service account's)"),
};
