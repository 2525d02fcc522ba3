// `gantry apps list|get|delete|scale|logs`: the org's deployed apps on the cluster of the current context, with
// JSON output for scripts (--output json).
import { PassThrough, Writable } from "node:stream";
import type { ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";
import { summarizeApp } from "../../platform/app-status.ts";
import { SOURCE_ANNOTATION } from "../../platform/modelapp-manifest.ts";
import { PlatformError } from "../../platform/platform-error.ts";
import {
  boolFlag,
  expectPositionals,
  parseArgs,
  stringFlag,
  UsageError,
  type FlagSpec,
  type ParsedArgs,
} from "../args.ts";
import type { CliContext, Command } from "../context.ts";
import { formatTable, relativeTime } from "../format.ts";
import { outputFormat, platformTarget, TARGET_FLAGS, TARGET_HELP, type PlatformTarget } from "../platform-target.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sub {
  usage: string;
  flags: Record<string, FlagSpec>;
  positionals: string[];
  run(target: PlatformTarget, args: string[], flags: ParsedArgs["flags"], ctx: CliContext): Promise<void>;
}

const json = (ctx: CliContext, value: unknown) => ctx.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

function replicasText(s: ReturnType<typeof summarizeApp>): string {
  return `${s.readyReplicas}/${s.replicas}`;
}

const list: Sub = {
  usage: "gantry apps list",
  flags: {},
  positionals: [],
  async run({ client, baseUrl }, _args, flags, ctx) {
    const output = outputFormat(flags);
    const apps = (await client.list()).map((a) => summarizeApp(a, baseUrl));
    if (output === "json") return void json(ctx, apps);
    if (apps.length === 0) return void ctx.say(`no apps in org ${client.org}`);
    const now = new Date();
    ctx.stdout.write(
      formatTable(
        ["APP", "MODEL", "AUTH", "READY", "STATE", "URL", "CREATED"],
        apps.map((s) => [
          s.app,
          s.servedModel || s.model, // what requests send as `model`
          s.auth,
          replicasText(s),
          s.state,
          s.url ?? "",
          s.created ? relativeTime(new Date(s.created), now) : "",
        ]),
      ),
    );
  },
};

const get: Sub = {
  usage: "gantry apps get <app>",
  flags: {},
  positionals: ["<app>"],
  async run({ client, baseUrl }, [name], flags, ctx) {
    const output = outputFormat(flags, ["text", "json", "yaml"]);
    const app = await client.mustGet(name!);
    const s = summarizeApp(app, baseUrl);
    const conditions = app.status?.conditions ?? [];
    if (output === "json") return void json(ctx, { ...s, spec: app.spec, conditions });
    if (output === "yaml") {
      const { stringify } = await import("yaml"); // loaded on use: every command's start would pay for it
      return void ctx.stdout.write(stringify(withoutManagedFields(app)));
    }
    const source = app.metadata.annotations?.[SOURCE_ANNOTATION];
    const rows: [string, string][] = [
      ["app", `${s.org}/${s.app}`],
      ["model", s.model],
      ...(s.servedModel && s.servedModel !== s.model
        ? [["serves as", `${s.servedModel} (the model requests send)`] as [string, string]]
        : []),
      ["auth", s.auth],
      ["state", `${s.state}: ${s.message}`],
      ["replicas", `${s.readyReplicas} ready of ${s.replicas} (scaling ${s.minReplicas}–${s.maxReplicas})`],
      ["url", s.url ?? "(not reported yet)"],
      ...(s.queueUrl ? [["queue url", s.queueUrl] as [string, string]] : []),
      ...(source ? [["source", source] as [string, string]] : []),
    ];
    ctx.stdout.write(rows.map(([k, v]) => `${`${k}:`.padEnd(11)}${v}`).join("\n") + "\n");
    if (conditions.length)
      ctx.stdout.write(
        `\n${formatTable(
          ["CONDITION", "STATUS", "REASON", "MESSAGE"],
          conditions.map((c) => [c.type, c.status, c.reason, c.message]),
        )}`,
      );
  },
};

const withoutManagedFields = (app: ModelApp): ModelApp => {
  const { managedFields: _managed, ...metadata } = app.metadata as ModelApp["metadata"] & { managedFields?: unknown };
  return { ...app, metadata };
};

const del: Sub = {
  usage: "gantry apps delete <app> [--no-wait]",
  flags: { "no-wait": { type: "boolean" } },
  positionals: ["<app>"],
  async run({ client }, [name], flags, ctx) {
    const output = outputFormat(flags);
    if (!(await client.delete(name!))) await client.mustGet(name!); // throws naming the org's apps
    if (!boolFlag(flags["no-wait"])) {
      const deadline = Date.now() + 120_000;
      while (await client.get(name!)) {
        if (Date.now() > deadline) throw new PlatformError(`${client.org}/${name} is still being deleted after 120 s`);
        await sleep(250);
      }
    }
    if (output === "json") json(ctx, { org: client.org, app: name, deleted: true });
    else ctx.stdout.write(`deleted ${client.org}/${name}\n`);
  },
};

function replicaBound(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) > 1000) throw new UsageError(`--${flag} must be a whole number from 0 to 1000`);
  return Number(v);
}

const scale: Sub = {
  usage: "gantry apps scale <app> --min N --max N",
  flags: { min: { type: "string" }, max: { type: "string" } },
  positionals: ["<app>"],
  async run({ client, baseUrl }, [name], flags, ctx) {
    const output = outputFormat(flags);
    const min = replicaBound("min", stringFlag(flags.min)),
      max = replicaBound("max", stringFlag(flags.max));
    if (min === undefined && max === undefined) throw new UsageError(`apps scale: give --min, --max or both`);
    if (max === 0) throw new UsageError(`--max must be at least 1 (--min 0 lets the app scale to zero)`);
    const app = await client.mustGet(name!);
    const current = summarizeApp(app, baseUrl);
    const lo = min ?? current.minReplicas,
      hi = max ?? current.maxReplicas;
    if (lo > hi) throw new UsageError(`--min ${lo} exceeds --max ${hi}`);
    const scaled = await client.setScaling(name!, {
      ...(min !== undefined ? { minReplicas: min } : {}),
      ...(max !== undefined ? { maxReplicas: max } : {}),
    });
    if (output === "json") return void json(ctx, summarizeApp(scaled, baseUrl));
    ctx.stdout.write(`${client.org}/${name} scales between ${lo} and ${hi} replicas\n`);
  },
};

/** Prefixes every line with the pod's name when several pods' logs interleave. */
function prefixed(out: NodeJS.WritableStream, prefix: string): Writable {
  let partial = "";
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop()!;
      for (const l of lines) out.write(`${prefix}${l}\n`);
      done();
    },
    final(done) {
      if (partial) out.write(`${prefix}${partial}\n`);
      done();
    },
  });
}

const logs: Sub = {
  usage: "gantry apps logs <app> [-f] [--tail N] [--container server|prepare]",
  flags: {
    follow: { type: "boolean", short: "f" },
    tail: { type: "string" },
    container: { type: "string", short: "c" },
  },
  positionals: ["<app>"],
  async run({ client }, [name], flags, ctx) {
    const tailText = stringFlag(flags.tail);
    if (tailText !== undefined && !/^\d+$/.test(tailText)) throw new UsageError(`--tail must be a number of lines`);
    const app = await client.mustGet(name!);
    const pods = (await client.pods(app)).filter((p) => !p.metadata?.deletionTimestamp);
    if (pods.length === 0)
      throw new PlatformError(
        `${client.org}/${name} has no pods${(app.status?.replicas ?? 0) === 0 ? " (scaled to zero: a request starts one)" : ""}`,
      );
    const wanted = stringFlag(flags.container);
    const streams = pods.map(async (pod) => {
      const podName = pod.metadata!.name!;
      const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.name);
      const container = wanted ?? pod.spec?.containers?.[0]?.name ?? "server";
      if (!names.includes(container))
        throw new UsageError(`pod ${podName} has no container "${container}" (it has: ${names.join(", ")})`);
      const sink = pods.length > 1 ? prefixed(ctx.stdout, `[${podName}] `) : new PassThrough();
      if (pods.length === 1) (sink as PassThrough).pipe(ctx.stdout, { end: false });
      const ended = new Promise<void>((resolve) => sink.once("finish", () => resolve()));
      await client.streamLog(podName, container, sink, {
        follow: boolFlag(flags.follow),
        tailLines: tailText === undefined ? undefined : Number(tailText),
      });
      await ended;
    });
    await Promise.all(streams);
  },
};

const SUBCOMMANDS: Record<string, Sub> = { list, ls: list, get, delete: del, rm: del, scale, logs };

export const appsCommand: Command = {
  name: "apps",
  group: "platform",
  usage: "gantry apps list|get|delete|scale|logs [<app>]",
  summary: "The org's deployed apps: list, status, delete, scaling bounds, logs",
  details: () => `${["list", "get", "delete", "scale", "logs"].map((n) => `  ${SUBCOMMANDS[n]!.usage}`).join("\n")}

  list     apps of the org: model, auth, ready/total replicas, state, URL
  get      one app: state, replicas, URL, conditions (-o json|yaml)
  delete   delete the app and its pods (waits until it is gone unless --no-wait)
  scale    set scaling.minReplicas / scaling.maxReplicas (the autoscaler works between them)
  logs     the app's pod logs (-f follows, --tail N, --container prepare for the model download)
${TARGET_HELP}`,
  async run(args, ctx) {
    const [subName, ...rest] = args;
    const sub = subName === undefined ? undefined : SUBCOMMANDS[subName];
    if (!sub)
      throw new UsageError(
        `apps: ${subName ? `unknown subcommand "${subName}"` : "missing subcommand"} (list, get, delete, scale, logs)`,
      );
    const { positionals, flags } = parseArgs(`apps ${subName}`, rest, { ...TARGET_FLAGS, ...sub.flags });
    const values = expectPositionals(positionals, sub.positionals, sub.usage);
    await sub.run(await platformTarget(flags, ctx), values, flags, ctx);
  },
};
