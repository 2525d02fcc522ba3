import { formatStats, streamAnswer, userTurn } from "../answer.ts";
import { boolFlag, parseArgs, stringFlag, UsageError, type FlagSpec } from "../args.ts";
import { ChatSession } from "../chat-session.ts";
import type { Command } from "../context.ts";
import { runRepl } from "../repl.ts";
import { resolveRunModel } from "../run-model.ts";
import { historyPath } from "../server-launch.ts";
import { isAppRef } from "../../platform/app-ref.ts";
import { RUN_APP_FLAGS, RUN_APP_HELP, runApp } from "../processes/run-app.ts";

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

const MODEL_FLAGS: Record<string, FlagSpec> = {
  keepalive: { type: "string" },
  format: { type: "string" },
  verbose: { type: "boolean" },
  nowordwrap: { type: "boolean" },
};

export const runCommand: Command = {
  name: "run",
  usage: "gantry run <model> [prompt...] | gantry run <file>::<export>",
  summary: "Chat with a model (a name, hf.co/<org>/<repo>[:<quant>], a .gguf file), or serve an app on this machine",
  details: () => `gantry run <model> [prompt...]
  Chats with a model (interactive on a terminal, /bye exits), or answers one prompt. The model is pulled or
  imported first when needed; a server starts in the background when none answers at GANTRY_HOST.

  --keepalive <duration>  how long the model stays loaded after the chat (e.g. 10m)
  --format json|<schema>  answer in JSON (or JSON matching a JSON schema)
  --verbose               timings after each answer
  --nowordwrap            print the answer as it comes, without wrapping

${RUN_APP_HELP}`,
  async run(args, ctx) {
    // <file>::<export> is an app; anything else a model. Only the first positional decides: a prompt may hold "::".
    const { positionals: first } = parseArgs("run", args, { ...MODEL_FLAGS, ...RUN_APP_FLAGS });
    if (first[0] !== undefined && isAppRef(first[0])) return runApp(args, ctx);
    const { positionals, flags } = parseArgs("run", args, MODEL_FLAGS);
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
