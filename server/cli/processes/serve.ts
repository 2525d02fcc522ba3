import { describeEnv, parseEnv } from "../../common/config.ts";
import { createLogger } from "../../common/logger.ts";
import { exitOnShutdownSignals } from "../../common/shutdown.ts";
import { ServerConfigSchema } from "../../config.ts";
import { parseArgs, stringFlag } from "../args.ts";
import type { Command } from "../context.ts";

/** Every variable the server (and the CLI, for GANTRY_HOST) reads, for --help. */
export const environmentHelp = (): string => `Environment variables:\n${describeEnv(ServerConfigSchema).join("\n")}\n`;

export const serveCommand: Command = {
  name: "serve",
  usage: "gantry serve [--model <ref>]...",
  summary: "Start the model server (preloads each --model and keeps it loaded)",
  details: environmentHelp,
  async run(args) {
    const { positionals, flags } = parseArgs("serve", args, { model: { type: "string", short: "m", multiple: true } });
    if (positionals.length > 0) throw new Error(`serve: unexpected argument "${positionals[0]}"`);
    const preload = Array.isArray(flags.model)
      ? flags.model.map(String)
      : stringFlag(flags.model)
        ? [stringFlag(flags.model)!]
        : [];
    const config = parseEnv(ServerConfigSchema);
    const logger = createLogger({ level: config.GANTRY_LOG_LEVEL, name: "gantry-serve" });
    const { ensureEngineOnFirstUse } = await import("../../setup/engine-first-use.ts");
    await ensureEngineOnFirstUse((line) => process.stderr.write(`${line}\n`));
    // Loaded on use: the engine (node-llama-cpp) and HTTP stack would slow every other command's start.
    const { startServer } = await import("../../serve.ts");
    const running = await startServer(config, logger, { preload });
    exitOnShutdownSignals(() => running.close(), logger);
  },
};
