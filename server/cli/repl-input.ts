// Interactive input of `gantry run`: `"""` multi-line blocks and the slash commands. Pure.
import { ThinkLevelSchema, type ThinkLevel } from "../api/tools.ts";

export const SHOW_TOPICS = ["info", "template", "parameters", "system", "license", "modelfile"] as const;
export type ShowTopic = (typeof SHOW_TOPICS)[number];

export type ReplInput =
  | { kind: "message"; text: string }
  | { kind: "empty" }
  | { kind: "bye" }
  | { kind: "help" }
  | { kind: "clear" }
  | { kind: "set-parameter"; name: string; values: string[] }
  | { kind: "set-system"; text: string }
  /** /set think [level] turns thinking on (at a level), /set nothink off. */
  | { kind: "set-think"; value: boolean | ThinkLevel }
  | { kind: "show"; topic: ShowTopic }
  | { kind: "image"; path: string; text: string }
  | { kind: "invalid"; message: string };

export const REPL_HELP = `Available Commands:
  /set parameter <name> <value>   Set a parameter (e.g. /set parameter temperature 0.2; stop takes several values)
  /set system <text>              Set the system message
  /set think [low|medium|high|max]
                                  Think before answering (models with the thinking capability); thinking shows dimmed
  /set nothink                    Answer without thinking
  /show info|template|parameters|system|license|modelfile
                                  Show model information
  /image <path> <text>            Ask about an image (image paths inside a prompt are attached too)
  /clear                          Clear the conversation
  /bye                            Exit
  /?, /help                       Help for a command

Use """ to begin and end a multi-line message.
`;

const MARK = '"""';

/** Collects lines until a `"""` block is closed; `push` returns the complete input, or null while a block is open. */
export class MultilineBuffer {
  private lines: string[] | null = null;

  get open(): boolean {
    return this.lines !== null;
  }

  push(line: string): string | null {
    if (this.lines === null) {
      const first = line.indexOf(MARK);
      if (first < 0) return line;
      const rest = line.slice(first + MARK.length);
      const close = rest.indexOf(MARK);
      // `"""one line"""`: opened and closed at once.
      if (close >= 0) return line.slice(0, first) + rest.slice(0, close);
      this.lines = [line.slice(0, first) + rest];
      return null;
    }
    const close = line.indexOf(MARK);
    if (close < 0) {
      this.lines.push(line);
      return null;
    }
    this.lines.push(line.slice(0, close));
    const text = this.lines.join("\n");
    this.lines = null;
    return text;
  }

  cancel(): void {
    this.lines = null;
  }
}

const words = (s: string): string[] => s.trim().split(/\s+/).filter(Boolean);

/** Splits "value" words, keeping double-quoted values together: /set parameter stop "a b" c → ["a b", "c"]. */
function values(s: string): string[] {
  const out: string[] = [];
  for (const m of s.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g))
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!);
  return out;
}

export function parseReplInput(text: string): ReplInput {
  const trimmed = text.trim();
  if (trimmed === "") return { kind: "empty" };
  if (!trimmed.startsWith("/")) return { kind: "message", text };
  const [cmd = "", ...args] = words(trimmed);
  const afterCmd = trimmed.slice(cmd.length).trim();
  switch (cmd.toLowerCase()) {
    case "/bye":
    case "/exit":
      return { kind: "bye" };
    case "/?":
    case "/help":
      return { kind: "help" };
    case "/clear":
      return { kind: "clear" };
    case "/set": {
      const what = (args[0] ?? "").toLowerCase();
      const rest = afterCmd.slice((args[0] ?? "").length).trim();
      if (what === "parameter") {
        const name = words(rest)[0];
        const vals = name === undefined ? [] : values(rest.slice(name.length));
        if (name === undefined || vals.length === 0)
          return { kind: "invalid", message: "usage: /set parameter <name> <value>" };
        return { kind: "set-parameter", name, values: vals };
      }
      if (what === "system")
        return rest ? { kind: "set-system", text: rest } : { kind: "invalid", message: "usage: /set system <text>" };
      if (what === "nothink") return { kind: "set-think", value: false };
      if (what === "think") {
        const level = rest.toLowerCase();
        if (level === "") return { kind: "set-think", value: true };
        const parsed = ThinkLevelSchema.safeParse(level);
        if (parsed.success) return { kind: "set-think", value: parsed.data };
        return { kind: "invalid", message: "usage: /set think [low|medium|high|max]" };
      }
      return {
        kind: "invalid",
        message: `unknown /set option "${args[0] ?? ""}" (use /set parameter, system, think or nothink)`,
      };
    }
    case "/show": {
      const topic = (args[0] ?? "").toLowerCase();
      if ((SHOW_TOPICS as readonly string[]).includes(topic)) return { kind: "show", topic: topic as ShowTopic };
      return { kind: "invalid", message: `usage: /show ${SHOW_TOPICS.join("|")}` };
    }
    case "/image": {
      const path = args[0];
      if (path === undefined) return { kind: "invalid", message: "usage: /image <path> <text>" };
      return { kind: "image", path, text: afterCmd.slice(path.length).trim() };
    }
    default:
      return { kind: "invalid", message: `unknown command "${cmd}" (type /? for help)` };
  }
}
