#!/usr/bin/env node
// The `gantry` command: one binary, every process is a subcommand.
import { ConfigError, describeEnv, parseEnv } from "../common/config.ts";
import { createLogger } from "../common/logger.ts";
import { ServerConfigSchema } from "../config.ts";
import { startServer } from "../serve.ts";
import { VERSION } from "../version.ts";

const HELP = `gantry ${VERSION} — serve GGUF chat models (Ollama- and OpenAI-compatible)

Usage:
  gantry serve [--model <ref>]...   Start the model server (preloads each --model and keeps it loaded)
  gantry --version                  Print the version

Environment variables:
${describeEnv(ServerConfigSchema).join("\n")}
`;

function fail(message: string): never {
  process.stderr.write(`Error: ${message}\n`);
  process.exit(1);
}

async function serve(args: string[]): Promise<void> {
  const preload: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--model" || a === "-m") { const v = args[++i]; if (!v) fail("--model needs a model reference"); preload.push(v); }
    else if (a.startsWith("--model=")) preload.push(a.slice("--model=".length));
    else if (a === "--help" || a === "-h") { process.stdout.write(HELP); return; }
    else fail(`unknown flag for serve: ${a}`);
  }
  const config = parseEnv(ServerConfigSchema);
  const logger = createLogger({ level: config.GANTRY_LOG_LEVEL, name: "gantry-serve" });
  const running = await startServer(config, logger, { preload });
  const stop = (signal: string) => {
    logger.info({ signal }, "received signal");
    void running.close().then(() => process.exit(0), (e: unknown) => { logger.error({ err: e }, "shutdown failed"); process.exit(1); });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "serve": return serve(rest);
    case "--version": case "-v": case "version": process.stdout.write(`gantry version ${VERSION}\n`); return;
    case undefined: case "--help": case "-h": case "help": process.stdout.write(HELP); return;
    default: fail(`unknown command "${cmd}" (see gantry --help)`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof ConfigError) fail(e.message);
  fail(e instanceof Error ? e.message : String(e));
});
