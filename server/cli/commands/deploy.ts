// `gantry deploy <file>::<export> --app-name <name> --auth private`: the hosted platform's deploy. Renders the app
// definition into a ModelApp, applies it with server-side apply under the CLI's own field manager (a redeploy updates
// the app in place: a new generation, rolling pods), follows it until Ready and prints its URL and an example request.
import { queueUrlOf } from "../../common/queue-url.ts";
import {
  AUTH_MODES,
  ROLLOUT_STRATEGIES,
  type AuthMode,
  type RolloutStrategy,
} from "../../../operator/api/v1alpha1/modelapp.ts";
import { parseKeepAlive } from "../../common/duration.ts";
import { appUrl, clusterInternalHint, summarizeApp } from "../../platform/app-status.ts";
import { loadApp } from "../../platform/load-app.ts";
import { appNameProblem, defaultAppName, exampleRequest, renderModelApp } from "../../platform/modelapp-manifest.ts";
import { checkSpec, servedModelName } from "../../../operator/api/v1alpha1/spec-checks.ts";
import { boolFlag, expectPositionals, oneOf, parseArgs, stringFlag, UsageError } from "../args.ts";
import type { CliContext, Command } from "../context.ts";
import { outputFormat, platformTarget, TARGET_FLAGS, TARGET_HELP } from "../platform-target.ts";

/** Condition lines that stay, and one progress line redrawn in place on a terminal (at most every 5 s elsewhere). */
function waitOutput(ctx: CliContext) {
  const tty = ctx.stderr.isTTY === true;
  let shown = false,
    lastAt = 0,
    lastKind = "";
  return {
    line(text: string) {
      ctx.stderr.write(`${tty && shown ? "\r\x1b[2K" : ""}  ${text}\n`);
      shown = false;
    },
    progress(text: string | undefined) {
      if (tty) {
        ctx.stderr.write(`\r\x1b[2K${text ? `  ${text}` : ""}`);
        shown = text !== undefined;
      } else if (text) {
        // Elsewhere (a CI log): a new kind of progress at once, the same kind (a moving download) every 5 s.
        const kind = text.split(":")[0]!;
        if (kind === lastKind && Date.now() - lastAt < 5000) return;
        lastKind = kind;
        lastAt = Date.now();
        ctx.stderr.write(`  ${text}\n`);
      }
    },
  };
}

export const deployCommand: Command = {
  name: "deploy",
  group: "platform",
  usage: "gantry deploy <file>::<export> --app-name <name> [--auth <mode>]",
  summary: "Deploy an app definition to the cluster as a ModelApp; waits until it is ready and prints its URL",
  details:
    () => `Renders the app (an export of a .ts/.mts/.cts/.js/.mjs/.cjs file made with defineApp, or a function returning
one) into a ModelApp named --app-name in the org, applies it (server-side apply, field manager gantry-cli), then
follows it: Scheduled, ModelCached (with the download's progress), Ready. A failure (InsufficientGPU,
ModelNotFound, InvalidSpec…) ends the wait with exit code 1; a bad app file exits with 2. Deploying again updates
the app in place.

  --app-name <name>      the app's name (app_id; default: the export's name)
  --auth <mode>          private (a key of the org), shared (any key), public (no key); default: the
                         definition's, else private
  --strategy <s>         recreate or rolling: how a redeploy replaces running pods (default: rolling on
                         ReadWriteMany volumes, else recreate)
  --no-wait              return once the ModelApp is applied
  --timeout <duration>   how long to wait for Ready (default 30m)
${TARGET_HELP}`,
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("deploy", args, {
      ...TARGET_FLAGS,
      "app-name": { type: "string" },
      auth: { type: "string" },
      strategy: { type: "string" },
      "no-wait": { type: "boolean" },
      timeout: { type: "string" },
    });
    const [ref] = expectPositionals(positionals, ["<file>::<export>"], this.usage);
    const auth = oneOf<AuthMode>("auth", stringFlag(flags.auth), AUTH_MODES);
    const strategy = oneOf<RolloutStrategy>("strategy", stringFlag(flags.strategy), ROLLOUT_STRATEGIES);
    const output = outputFormat(flags);
    let timeoutMs: number;
    try {
      timeoutMs = parseKeepAlive(stringFlag(flags.timeout) ?? "30m") ?? Number.POSITIVE_INFINITY;
    } catch (e) {
      throw new UsageError(`--timeout: ${(e as Error).message}`);
    }

    const app = await loadApp(ref!, ctx.cwd, "cluster");
    const name = stringFlag(flags["app-name"]) ?? defaultAppName(app.exportName);
    const problem = appNameProblem(name);
    if (problem) throw new UsageError(`--app-name: ${problem}`);
    const { client, baseUrl } = await platformTarget(flags, ctx);
    const org = client.org;
    const manifest = renderModelApp(app.spec, { name, org, auth, strategy, source: ref! });

    const before = await client.get(name);
    const applied = await client.apply(manifest);
    const generation = applied.metadata.generation ?? 0;
    const verb = !before ? "created" : (before.metadata.generation ?? 0) === generation ? "unchanged" : "updated";
    ctx.say(`ModelApp ${org}/${name} ${verb} (generation ${generation}) from ${ref}`);

    let final = applied;
    if (!boolFlag(flags["no-wait"])) {
      ctx.say(`waiting for ${name} to be ready (Ctrl-C stops waiting; the deploy goes on)`);
      const { waitForDeploy } = await import("../../platform/deploy-wait.ts");
      const stopWaiting = () => {
        ctx.stderr.write(`\nstopped waiting: ${name} goes on deploying (gantry apps get ${name} --org ${org})\n`);
        process.exit(130);
      };
      process.once("SIGINT", stopWaiting);
      try {
        final = await waitForDeploy(client, name, generation, waitOutput(ctx), { timeoutMs });
      } finally {
        process.off("SIGINT", stopWaiting);
      }
    }

    const url = appUrl(final, baseUrl);
    const model = servedModelName(name, checkSpec(app.parsed));
    if (output === "json") {
      const summary = summarizeApp(final, baseUrl);
      ctx.stdout.write(
        `${JSON.stringify({ org, app: name, url: url ?? null, queueUrl: summary.queueUrl, model, generation, status: summary.state, ready: summary.ready, conditions: final.status?.conditions ?? [] })}\n`,
      );
      return;
    }
    const auth_ = manifest.spec.auth ?? final.spec?.auth ?? "private";
    const scaledToZero = summarizeApp(final, baseUrl).state === "ScaledToZero";
    const head = boolFlag(flags["no-wait"])
      ? `${name} is deploying`
      : `${name} is ready${scaledToZero ? " (scaled to zero: the first request starts a replica)" : ""}`;
    if (!url) {
      ctx.stdout.write(`${head}; its URL appears once the operator reports it: gantry apps get ${name} --org ${org}\n`);
      return;
    }
    const queueUrl = queueUrlOf(url, org, name);
    ctx.stdout.write(`${head} at ${url}\n${queueUrl ? `queue (fal's queue API): ${queueUrl}\n` : ""}\n`);
    ctx.stdout.write(`${exampleRequest(url, model, auth_)}\n`);
    const internal = baseUrl ? undefined : clusterInternalHint(url);
    if (internal) ctx.stdout.write(`\n${internal}\n`);
    if (auth_ !== "public")
      ctx.stdout.write(`\nCreate an API key for org ${org} with: gantry keys create --org ${org}\n`);
  },
};
