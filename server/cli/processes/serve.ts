import { envHelp, parseEnv } from "../../common/config.ts";
import { createLogger } from "../../common/logger.ts";
import { exitOnShutdownSignals } from "../../common/shutdown.ts";
import { ServeProcessEnvSchema } from "../../setup/config.ts";
import { withOllamaAliases } from "../../config.ts";
import { parseArgs, stringFlag } from "../args.ts";
import { CliOnlyEnvSchema } from "../config.ts";
import type { Command } from "../context.ts";

/** Every variable `gantry serve` reads (the server's and the engine setup's), for `gantry serve --help`. */
const serveEnvironmentHelp = (): string => envHelp("Environment variables", ServeProcessEnvSchema);

/** Every variable of the server and the CLI, for `gantry --help`. */
export const environmentHelp = (): string =>
  `${envHelp("Environment variables (gantry serve; the CLI reads GANTRY_HOST, GANTRY_MODELS and the engine setup's too)", ServeProcessEnvSchema)}
${envHelp("Environment variables of the platform commands (deploy, apps, keys)", CliOnlyEnvSchema)}
The operator's and the gateway's: gantry operator --help, gantry gateway --help.
`;

export const serveCommand: Command = {
  name: "serve",
  usage: "gantry serve [--model <ref>]...",
  summary: "Start the model server (preloads each --model and keeps it loaded)",
  details: serveEnvironmentHelp,
  run: (args, ctx) => serve(args, ctx.env),
};

/** `gantry serve <args>` with the environment `env`: the server until a shutdown signal. */
export async function serve(args: string[], env: Record<string, string | undefined>): Promise<void> {
  {
    const { positionals, flags } = parseArgs("serve", args, { model: { type: "string", short: "m", multiple: true } });
    if (positionals.length > 0) throw new Error(`serve: unexpected argument "${positionals[0]}"`);
    const preload = Array.isArray(flags.model)
      ? flags.model.map(String)
      : stringFlag(flags.model)
        ? [stringFlag(flags.model)!]
        : [];
    const config = parseEnv(ServeProcessEnvSchema, withOllamaAliases(env));
    const logger = createLogger({ level: config.GANTRY_LOG_LEVEL, name: "gantry-serve" });
    const { assertWritableStore } = await import("../../store/writable.ts");
    await assertWritableStore(config.GANTRY_MODELS);
    const { ensureEngineOnFirstUse } = await import("../../setup/engine-first-use.ts");
    await ensureEngineOnFirstUse((line) => process.stderr.write(`${line}\n`), config);
    // Loaded on use: the engine (node-llama-cpp) and HTTP stack would slow every other command's start.
    const { startServer } = await import("../../serve.ts");
    const running = await startServer(config, logger, { preload });
    exitOnShutdownSignals(() => running.close(), logger);
  }
}
