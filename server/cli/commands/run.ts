import { ApiError } from "../../api/client.ts";
import type { ShowResponse } from "../../api/store-schemas.ts";
import { formatStats, streamAnswer, userTurn } from "../answer.ts";
import { boolFlag, parseArgs, stringFlag, UsageError } from "../args.ts";
import { ChatSession } from "../chat-session.ts";
import type { CliContext, Command } from "../context.ts";
import { isHubRef } from "../../common/hub-ref.ts";
import { isGgufPath, modelNameForFile, resolveUserPath, uploadFiles } from "../local-model.ts";
import { runRepl } from "../repl.ts";
import { historyPath } from "../server-launch.ts";
import { pullModel } from "../show-progress.ts";

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === "string" ? Buffer.from(c) : c);
  return Buffer.concat(chunks).toString("utf8");
}

/** --format: "json" or a JSON schema object. */
function parseFormat(text: string): "json" | Record<string, unknown> {
  if (text === "json") return "json";
  try {
    const v: unknown = JSON.parse(text);
    if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* reported below */
  }
  throw new UsageError(`--format must be "json" or a JSON schema object`);
}

/** A local GGUF becomes a model named after the file (blob uploaded if the server lacks it). */
async function importGguf(ctx: CliContext, ref: string): Promise<string> {
  const file = resolveUserPath(ref, ctx.cwd);
  const name = modelNameForFile(file);
  const files = await uploadFiles(ctx.client, [file], (l) => ctx.say(l));
  for await (const p of ctx.client.create({ model: name, files })) void p;
  return name;
}

/** The model to chat with, imported or pulled first when needed, and what /api/show says about it. */
export async function resolveRunModel(ctx: CliContext, ref: string): Promise<{ name: string; show: ShowResponse }> {
  const name = isGgufPath(ref) ? await importGguf(ctx, ref) : ref;
  try {
    return { name, show: await ctx.client.show(name) };
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404 && isHubRef(name))) throw e;
  }
  await pullModel(ctx, name);
  return { name, show: await ctx.client.show(name) };
}

export const runCommand: Command = {
  name: "run",
  usage: "gantry run <model> [prompt...]",
  summary: "Chat with a model (a name, hf.co/<org>/<repo>[:<quant>], or a path to a .gguf file)",
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("run", args, {
      keepalive: { type: "string" },
      format: { type: "string" },
      verbose: { type: "boolean" },
      nowordwrap: { type: "boolean" },
    });
    const [ref, ...words] = positionals;
    if (ref === undefined) throw new UsageError(`missing model (usage: ${this.usage})`);
    const keepAlive = stringFlag(flags.keepalive);
    const format = stringFlag(flags.format);
    const verbose = boolFlag(flags.verbose);

    let prompt = words.join(" ");
    const interactive = ctx.stdin.isTTY === true;
    if (!interactive) prompt = [prompt, (await readAll(ctx.stdin)).trimEnd()].filter((p) => p !== "").join("\n");

    await ctx.ensureServer();
    const { name, show } = await resolveRunModel(ctx, ref);
    const session = new ChatSession(name, { keepAlive });

    if (prompt === "" && interactive) {
      await runRepl(ctx, session, show, { verbose, historyFile: historyPath(ctx.config) });
      return;
    }
    if (prompt === "") {
      // Nothing to ask: load the model, as `ollama run <model> < /dev/null` does.
      for await (const c of ctx.client.generate({ model: name, ...(keepAlive ? { keep_alive: keepAlive } : {}) }))
        void c;
      return;
    }
    const req = session.request(userTurn(ctx, prompt));
    const { text, stats } = await streamAnswer(ctx, format ? { ...req, format: parseFormat(format) } : req);
    if (!text.endsWith("\n")) ctx.stdout.write("\n");
    if (verbose && stats) ctx.stderr.write(formatStats(stats));
  },
};
