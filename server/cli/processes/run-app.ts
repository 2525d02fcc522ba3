// `gantry run <file>::<export>`: a one-off server for an app on this machine, as the hosted platform's `run` starts
// one. A model server runs in this process on a free loopback port (the app's server settings; the user's model store,
// so a model is downloaded once): the model is pulled with progress or imported, the app's Modelfile overrides are
// applied (as `<app>:latest`, as in the cluster), and it is loaded. In front of it the gateway's own pipeline (auth
// mode, key check, holds, usage) serves {url}/local/<app>/... and plain /v1 and /api, so a client that works here
// works against the deployed app. Public by default; private or shared apps get a temporary key, printed once.
import path from "node:path";
import { AUTH_MODES, type AuthMode } from "../../../operator/api/v1alpha1/modelapp.ts";
import { InvalidSpecError } from "../../../operator/api/v1alpha1/spec-checks.ts";
import { parseEnv } from "../../common/config.ts";
import { AppFileError, loadApp } from "../../platform/load-app.ts";
import { appNameProblem, defaultAppName } from "../../platform/modelapp-manifest.ts";
import {
  LOCAL_ORG,
  localAppUrl,
  localAuth,
  localServerEnv,
  planLocalModel,
  runningAppText,
} from "../../platform/local-app.ts";
import { expectPositionals, oneOf, parseArgs, stringFlag, UsageError, type FlagSpec } from "../args.ts";
import type { CliContext } from "../context.ts";
import { outputFormat } from "../platform-target.ts";
import { gantryHome } from "../server-launch.ts";

export const RUN_APP_FLAGS: Record<string, FlagSpec> = {
  "app-name": { type: "string" },
  auth: { type: "string" },
  host: { type: "string" },
  port: { type: "string", short: "p" },
  output: { type: "string", short: "o" },
};

export const DEFAULT_APP_PORT = 8080;

export const RUN_APP_HELP = `gantry run <file>::<export> [--app-name <name>] [--auth <mode>] [--port <n>] [--host <addr>]
  Serves an app (an export of a .ts/.mts/.cts/.js/.mjs/.cjs file made with defineApp, or a function returning one) on this
  machine until Ctrl-C: pulls its model (progress shown; the first run downloads it, later runs use the local
  store), applies its Modelfile overrides, and serves it through the gateway's pipeline at {url}/local/<app>/v1/...
  (org local), and at plain {url}/v1/... and {url}/api/... The app's server settings and plain env values apply;
  its resources and scaling apply on a cluster (gantry deploy). Logs go to <gantry home>/logs/run-<app>.log; each
  request is summarized on stderr.

  --app-name <name>      the app's name (app_id; default: the export's name)
  --auth <mode>          public (no key), private or shared (a temporary key, printed once); default: the
                         definition's, else public
  -p, --port <n>         port (default ${DEFAULT_APP_PORT}; 0 picks a free one)
  --host <addr>          listen address (default 127.0.0.1; 0.0.0.0 for other machines)
  -o, --output json      print {org, app, url, model, auth, key} as one JSON line once the app answers
`;

function parsePort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new UsageError(`--port must be a port number (0-65535), not "${text}"`);
  return n;
}

export async function runApp(args: string[], ctx: CliContext): Promise<void> {
  const { positionals, flags } = parseArgs("run", args, RUN_APP_FLAGS);
  const [ref] = expectPositionals(positionals, ["<file>::<export>"], "gantry run <file>::<export> [flags]");
  const authFlag = oneOf<AuthMode>("auth", stringFlag(flags.auth), AUTH_MODES);
  const output = outputFormat(flags);
  const port = parsePort(stringFlag(flags.port) ?? String(DEFAULT_APP_PORT));
  const host = stringFlag(flags.host) ?? "127.0.0.1";

  const loaded = await loadApp(ref!, ctx.cwd, "local");
  const name = stringFlag(flags["app-name"]) ?? defaultAppName(loaded.exportName);
  const problem = appNameProblem(name);
  if (problem) throw new UsageError(`--app-name: ${problem}`);
  let plan;
  try {
    plan = planLocalModel(name, loaded.parsed);
  } catch (e) {
    if (e instanceof InvalidSpecError) throw new AppFileError(`${ref}: invalid app: ${e.message}`);
    throw e;
  }
  const auth = localAuth(authFlag, loaded.spec);

  // Loaded on use: the engine, the HTTP stack and the gateway would slow every other command's start.
  const [{ ServerConfigSchema }, { startServer }, { startLocalGateway }, { openRunLog }] = await Promise.all([
    import("../../config.ts"),
    import("../../serve.ts"),
    import("../../gateway/local.ts"),
    import("../run-log.ts"),
  ]);
  const config = parseEnv(ServerConfigSchema, localServerEnv(loaded.parsed, ctx.env));
  const log = openRunLog(
    path.join(gantryHome(ctx.config), "logs", `run-${name}.log`),
    config.GANTRY_LOG_LEVEL,
    ctx.stderr,
  );

  // Listening first: a port in use fails at once, not after a download. Requests that arrive before the model is
  // ready are held, as the cluster holds them for an app at zero replicas.
  const gateway = await startLocalGateway({
    org: LOCAL_ORG,
    app: name,
    auth,
    host,
    port,
    logger: log.gateway,
    loadBalancing: loaded.parsed.loadBalancing,
  });
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal === "SIGINT") process.exit(130); // a second Ctrl-C: at once
      return;
    }
    stopping = true;
    gateway.gateway.flushEnded(); // the lines of the requests answered so far come first
    ctx.stderr.write(`${ctx.stderr.isTTY ? "\n" : ""}stopping ${name}\n`);
    void (async () => {
      await gateway.close(5000);
      await server?.close(2000);
      log.server.info("stopped");
      await log.close();
      ctx.stderr.write(`stopped ${name}\n`);
      process.exit(0);
    })().catch((e: unknown) => {
      ctx.stderr.write(`Error: stopping ${name}: ${(e as Error).message}\n`);
      process.exit(1);
    });
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);

  try {
    const { ensureEngineOnFirstUse } = await import("../../setup/engine-first-use.ts");
    await ensureEngineOnFirstUse(ctx.say, ctx.config);
    server = await startServer(config, log.server);
    const { GantryClient } = await import("../../api/client.ts");
    const { resolveRunModel } = await import("../run-model.ts");
    // The model server of this run; relative model files resolve against the app file's directory.
    const local: CliContext = {
      ...ctx,
      client: new GantryClient(server.url),
      cwd: path.dirname(path.resolve(ctx.cwd, loaded.file)),
      ensureServer: async () => {},
    };
    const { name: base } = await resolveRunModel(local, plan.base, (m) =>
      ctx.say(`downloading ${m}: the first run of this model (later runs start from ${config.GANTRY_MODELS})`),
    );
    let served = plan.served ?? base;
    if (plan.overrides) {
      served = `${name}:latest`;
      ctx.say(`applying the app's Modelfile overrides as ${served}`);
      const { createWithOverrides } = await import("../commands/create.ts");
      await createWithOverrides(local, served, base, plan.overrides);
    }
    // As a pod does: only the app's model, which the app's name selects too.
    server.store.restrict({ only: [served], aliases: { [name]: served } });
    ctx.say(`loading ${served}`);
    await server.load(served);
    gateway.serve(server.url, plan.base, served);
    const info = {
      org: LOCAL_ORG,
      app: name,
      base: gateway.base,
      model: served,
      auth,
      ...(gateway.key ? { key: gateway.key } : {}),
    };
    if (output === "json") ctx.stdout.write(`${JSON.stringify({ ...info, url: localAppUrl(info) })}\n`);
    else ctx.stdout.write(runningAppText(info));
    ctx.say(`logs: ${log.file}; Ctrl-C stops ${name}`);
  } catch (e) {
    if (stopping) return new Promise(() => {}); // Ctrl-C during the start: the stop handler exits
    gateway.fail("ServerFailed", (e as Error).message);
    await gateway.close(0);
    await server?.close(0);
    throw e;
  }
}
