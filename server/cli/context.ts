// What every command receives: the API client, the environment and the process's streams (injectable for tests).
import type { GantryClient } from "../api/client.ts";
import type { Environment } from "../common/config.ts";
import type { CliEnv } from "./config.ts";

export interface CliStreams {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface CliContext extends CliStreams {
  client: GantryClient;
  /** The CLI's settings (server/cli/config.ts), parsed at start. */
  config: CliEnv;
  /**
   * The environment as the CLI was started with: a process entry point parses its own process's schema from it, and a
   * background server inherits it. No command reads a variable from it directly.
   */
  env: Environment;
  cwd: string;
  /** Starts a background server when none answers (run, pull, create). */
  ensureServer(): Promise<void>;
  /** A line on stderr (progress and notices never mix with a command's real output). */
  say(line: string): void;
}

export interface Command {
  name: string;
  /** The --help section: the local model server and CLI (default), or the hosted platform on Kubernetes. */
  group?: "platform";
  aliases?: readonly string[];
  /** One line for --help. */
  usage: string;
  summary: string;
  /** More text for `gantry <command> --help`. */
  details?: () => string;
  run(args: string[], ctx: CliContext): Promise<void>;
}
