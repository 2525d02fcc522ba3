// The process entry points: the `gantry` subcommands that start a long-running process (or a pod's init step) rather
// than talk to a server. Every other command (server/cli/commands/) is a client of the HTTP API. The image's
// Deployment runs `gantry serve` (with `gantry prepare` as its init step), the chart runs `gantry operator` and
// `gantry gateway`.
export { gatewayCommand } from "./gateway.ts";
export { operatorCommand } from "./operator.ts";
export { prepareCommand } from "./prepare.ts";
export { environmentHelp, serveCommand } from "./serve.ts";
