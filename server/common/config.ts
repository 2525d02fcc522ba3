// Parse a process's configuration from the environment once, against a zod schema, failing fast with every
// invalid variable listed. Empty strings count as unset. No module reads process.env except through this.
import type { z } from "zod";

export class ConfigError extends Error {
  readonly issues: string[];
  constructor(issues: string[]) {
    super(`invalid configuration:\n  ${issues.join("\n  ")}`);
    this.issues = issues;
    this.name = "ConfigError";
  }
}

export function parseEnv<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<S> {
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

/** Lines for `--help`: every variable of a schema with its description and default. */
export function describeEnv(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape).map(([key, s]) => {
    const desc = (s as z.ZodType).description ?? "";
    return `  ${key.padEnd(28)} ${desc}`;
  });
}
