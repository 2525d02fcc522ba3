#!/usr/bin/env node
// The `gantry` command: one binary, every process is a subcommand. Model commands are clients of the HTTP API at
// GANTRY_HOST; failures print one line `Error: <message>` on stderr and exit 1 (2 for a usage error or a bad app file),
// never a stack trace.
import { GantryClient } from "../api/client.ts";
import { ConfigError, parseEnv, processEnvironment } from "../common/config.ts";
import { VERSION } from "../common/version.ts";
import { UsageError } from "./args.ts";
import { CliEnvSchema } from "./config.ts";
import type { CliContext, Command } from "./context.ts";
import { appsCommand } from "./commands/apps.ts";
import { cpCommand } from "./commands/cp.ts";
import { createCommand } from "./commands/create.ts";
import { deployCommand } from "./commands/deploy.ts";
import { keysCommand } from "./commands/keys.ts";
import { listCommand } from "./commands/list.ts";
import { psCommand } from "./commands/ps.ts";
import { pullCommand } from "./commands/pull.ts";
import { rmCommand } from "./commands/rm.ts";
import { runCommand } from "./commands/run.ts";
import { showCommand } from "./commands/show.ts";
import { stopCommand } from "./commands/stop.ts";
import { versionCommand } from "./commands/version.ts";
import {
  environmentHelp,
  gatewayCommand,
  operatorCommand,
  prepareCommand,
  PROCESS_COMMANDS,
  serveCommand,
} from "./processes/index.ts";
import { ensureServer, serverUrl } from "./server-launch.ts";

const COMMANDS: readonly Command[] = [
  serveCommand,
  runCommand,
  pullCommand,
  createCommand,
  showCommand,
  listCommand,
  psCommand,
  stopCommand,
  cpCommand,
  rmCommand,
  deployCommand,
  appsCommand,
  prepareCommand,
  operatorCommand,
  gatewayCommand,
  keysCommand,
  versionCommand,
];

function helpText(): string {
  const local = COMMANDS.filter((c) => c.group !== "platform"),
    platform = COMMANDS.filter((c) => c.group === "platform");
  const width = Math.max(...local.map((c) => c.usage.length));
  const lines = (cs: readonly Command[]) => {
    const w = Math.max(...cs.map((c) => c.usage.length));
    return cs.map((c) => `  ${c.usage.padEnd(w + 2)}${c.summary}`).join("\n");
  };
  return `gantry ${VERSION} — serve GGUF chat models (Ollama- and OpenAI-compatible)

Models (the local server and its CLI):
${lines(local)}
  ${"gantry --help".padEnd(width + 2)}Show this help (gantry <command> --help for a command's flags)

Platform (apps on Kubernetes; the cluster of the kubeconfig's context):
${lines(platform)}

${environmentHelp()}`;
}

const findCommand = (name: string): Command | undefined =>
  COMMANDS.find((c) => c.name === name || c.aliases?.includes(name));

/**
 * A process entry point (serve, prepare, operator, gateway) parses its own process's schema from `env` when it starts;
 * every other command gets the CLI's settings parsed here (every invalid variable listed at once).
 */
function context(command: Command): CliContext {
  const env = processEnvironment();
  const config = parseEnv(CliEnvSchema, PROCESS_COMMANDS.includes(command) ? {} : env);
  const client = new GantryClient(serverUrl(config.GANTRY_HOST));
  const say = (line: string) => {
    process.stderr.write(`${line}\n`);
  };
  return {
    client,
    config,
    env,
    cwd: process.cwd(),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    say,
    ensureServer: () => ensureServer(client, { config, env, say }),
  };
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(helpText());
    return;
  }
  const command = findCommand(name);
  if (!command) throw new UsageError(`unknown command "${name}" (see gantry --help)`);
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(
      `Usage: ${command.usage}\n  ${command.summary}\n${command.details ? `\n${command.details()}` : ""}`,
    );
    return;
  }
  await command.run(rest, context(command));
}

/** The whole message on one line (a ConfigError lists every invalid variable, separated by ";"). */
function errorLine(e: unknown): string {
  if (e instanceof ConfigError) return `invalid configuration: ${e.issues.join("; ")}`;
  const msg = e instanceof Error ? e.message : String(e);
  return msg
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .join(" ");
}

// `gantry run m "…" | head` closes the pipe early: that ends the command quietly, as for any Unix tool.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(0);
  throw e;
});

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`Error: ${errorLine(e)}\n`);
  // An error may say which exit code it means (a usage error, a bad app file: 2); everything else is 1.
  const code = (e as { exitCode?: unknown } | null)?.exitCode;
  process.exitCode = typeof code === "number" ? code : 1;
});
