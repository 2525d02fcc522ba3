// The interactive chat of `gantry run <model>` on a terminal: node:readline line editing and history, `"""` blocks,
// slash commands, Ctrl-C cancels an answer (or the line), Ctrl-D or /bye exits.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import type { ShowResponse } from "../api/store-schemas.ts";
import type { ChatMessage } from "../api/client.ts";
import { streamAnswer, formatStats, userTurn } from "./answer.ts";
import type { ChatSession } from "./chat-session.ts";
import type { CliContext } from "./context.ts";
import { resolveUserPath } from "./local-model.ts";
import { MultilineBuffer, parseReplInput, REPL_HELP, type ShowTopic } from "./repl-input.ts";
import { formatShowSummary } from "./show-summary.ts";

function showText(topic: ShowTopic, show: ShowResponse, session: ChatSession): string {
  switch (topic) {
    case "info":
      return formatShowSummary(show);
    case "parameters": {
      const user = session.describeOptions();
      const model = show.parameters ?? "";
      if (!user && !model) return "No parameters were specified for this model.\n";
      return `${model ? `Model defined parameters:\n${model}\n` : ""}${user ? `${model ? "\n" : ""}User defined parameters:\n${user}\n` : ""}`;
    }
    case "system": {
      const system = session.system ?? show.system;
      return system ? `${system}\n` : "No system message was specified for this model.\n";
    }
    case "template":
      return show.template ? `${show.template}\n` : "No prompt template was specified for this model.\n";
    case "license":
      return show.license ? `${show.license}\n` : "No license was specified for this model.\n";
    case "modelfile":
      return show.modelfile;
  }
}

const HISTORY_SIZE = 500;

/** Lines of a history file, newest first (readline's order); a missing or unreadable file is an empty history. */
function loadHistory(file: string): string[] {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .slice(-HISTORY_SIZE)
      .reverse();
  } catch {
    return [];
  }
}

function saveHistory(file: string, newestFirst: readonly string[]): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      [...newestFirst]
        .reverse()
        .map((l) => `${l}\n`)
        .join(""),
    );
  } catch {
    /* history is a convenience: never fail the chat over it */
  }
}

export async function runRepl(
  ctx: CliContext,
  session: ChatSession,
  show: ShowResponse,
  opts: { verbose: boolean; historyFile?: string },
): Promise<void> {
  const rl = readline.createInterface({
    input: ctx.stdin,
    output: ctx.stdout,
    terminal: ctx.stdin.isTTY === true,
    prompt: ">>> ",
    historySize: HISTORY_SIZE,
    history: opts.historyFile ? loadHistory(opts.historyFile) : [],
    removeHistoryDuplicates: true,
  });
  const historyFile = opts.historyFile;
  // Multi-line lines are kept one by one in history: recalling them re-types the block line by line.
  if (historyFile) rl.on("history", (lines: string[]) => saveHistory(historyFile, lines));
  const multiline = new MultilineBuffer();
  let answering: AbortController | null = null;
  rl.on("SIGINT", () => {
    if (answering) {
      answering.abort();
      return;
    }
    if (multiline.open) {
      multiline.cancel();
      ctx.stdout.write("\n");
      rl.setPrompt(">>> ");
      rl.prompt();
      return;
    }
    if (rl.line) {
      rl.write(null, { ctrl: true, name: "u" });
      return;
    }
    ctx.stdout.write("\nUse Ctrl + d or /bye to exit.\n");
    rl.prompt();
  });

  const ask = async (user: ChatMessage): Promise<void> => {
    answering = new AbortController();
    try {
      const { text, stats } = await streamAnswer(ctx, session.request(user), answering.signal);
      session.commit(user, text);
      ctx.stdout.write(text.endsWith("\n") ? "\n" : "\n\n");
      if (opts.verbose && stats) ctx.stderr.write(formatStats(stats));
    } catch (e) {
      if (answering.signal.aborted) ctx.stdout.write("\n");
      else ctx.stderr.write(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
    } finally {
      answering = null;
    }
  };

  rl.prompt();
  for await (const line of rl) {
    const text = multiline.push(line);
    if (text === null) {
      rl.setPrompt("... ");
      rl.prompt();
      continue;
    }
    rl.setPrompt(">>> ");
    const input = parseReplInput(text);
    switch (input.kind) {
      case "bye":
        rl.close();
        return;
      case "empty":
        break;
      case "help":
        ctx.stdout.write(REPL_HELP);
        break;
      case "clear":
        session.clear();
        ctx.stdout.write("Cleared session context\n");
        break;
      case "invalid":
        ctx.stdout.write(`${input.message}\n`);
        break;
      case "set-system":
        session.system = input.text;
        ctx.stdout.write("Set system message.\n");
        break;
      case "set-think":
        session.think = input.value;
        ctx.stdout.write(
          input.value === false
            ? "Set 'nothink' mode.\n"
            : `Set 'think' mode${input.value === true ? "" : ` to '${input.value}'`}.\n`,
        );
        break;
      case "set-parameter": {
        const err = session.setParameter(input.name, input.values);
        ctx.stdout.write(err ? `Error: ${err}\n` : `Set parameter '${input.name}' to '${input.values.join(", ")}'\n`);
        break;
      }
      case "show":
        ctx.stdout.write(showText(input.topic, show, session));
        break;
      case "image":
        try {
          await ask(userTurn(ctx, input.text, [resolveUserPath(input.path, ctx.cwd)]));
        } catch (e) {
          ctx.stderr.write(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
        }
        break;
      case "message":
        try {
          await ask(userTurn(ctx, input.text));
        } catch (e) {
          ctx.stderr.write(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
        }
        break;
    }
    rl.prompt();
  }
  ctx.stdout.write("\n");
}
