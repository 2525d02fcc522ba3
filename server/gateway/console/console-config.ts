// The console's settings (the gateway config's `console` section): session lifetimes and the sign-in throttle.
import { z } from "zod";

export const ConsoleConfigSchema = z
  .object({
    enabled: z.boolean().default(true).describe("Serve the console at /_gantry/console/ and its sign-in routes."),
    sessionIdleMinutes: z
      .number()
      .positive()
      .default(30)
      .describe("A console session ends after this long without a request."),
    sessionMaxHours: z
      .number()
      .positive()
      .default(12)
      .describe("A console session ends this long after sign-in, however active."),
    signInFreeFailures: z
      .int()
      .min(0)
      .default(5)
      .describe("Failed sign-ins from one address before each further attempt must wait (doubling up to 60 s)."),
  })
  .strict()
  .describe("The console: the account dashboard served at /_gantry/console/.");
export type ConsoleConfig = z.infer<typeof ConsoleConfigSchema>;

export const CONSOLE_DEFAULTS: ConsoleConfig = ConsoleConfigSchema.parse({});
