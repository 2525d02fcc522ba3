// The process entry points: the `gantry` subcommands that start a long-running process (or a pod's init step) rather
// than talk to a server. Every other command (server/cli/commands/) is a client of the HTTP API. The image's
// Deployment runs `gantry serve` (with `gantry prepare` as its init step), the chart runs `gantry operator` and
// `gantry gateway`. `gantry run <file>::<export>` (run-app.ts, reached through the run command) runs a model server
// and a gateway in the foreground.
import type { Command } from "../context.ts";
import { gatewayCommand } from "./gateway.ts";
import { operatorCommand } from "./operator.ts";
import { prepareCommand } from "./prepare.ts";
import { serveCommand } from "./serve.ts";

export { gatewayCommand, operatorCommand, prepareCommand, serveCommand };
export { environmentHelp } from "./serve.ts";

/** The process entry points: each parses its own process's config schema from the environment when it starts. */
export const PROCESS_COMMANDS: readonly Command[] = [serveCommand, prepareCommand, operatorCommand, gatewayCommand];
