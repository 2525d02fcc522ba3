// The logs of `gantry run <file>::<export>`, which runs a model server and a gateway in the foreground: every JSON log
// line goes to a file, and the terminal gets one short line per request through the gateway, and each warning or
// error. Like every gantry log: no prompts, no keys.
import fs from "node:fs";
import path from "node:path";
import { createLogger, type Logger } from "../common/logger.ts";

export const GATEWAY_LOGGER = "gantry-gateway";
export const SERVER_LOGGER = "gantry-serve";

interface Entry {
  name?: string;
  level?: string;
  msg?: string;
  method?: string;
  path?: string;
  status?: number;
  ms?: number;
  promptTokens?: number;
  completionTokens?: number;
  err?: unknown;
}

/** The terminal's line for a log entry (a request through the gateway, a warning, an error), or undefined. Pure. */
export function terminalLine(e: Entry): string | undefined {
  if (e.name === GATEWAY_LOGGER && (e.msg === "request" || e.msg === "client closed the connection")) {
    const tokens = e.completionTokens !== undefined ? `, ${e.promptTokens ?? 0} + ${e.completionTokens} tokens` : "";
    const closed = e.status === 499 ? " (client closed the connection)" : "";
    return `${e.method ?? "?"} ${e.path ?? "?"} ${e.status ?? "?"}${closed} (${e.ms ?? "?"} ms${tokens})`;
  }
  if (e.level === "warn" || e.level === "error" || e.level === "fatal") {
    const err = typeof e.err === "string" ? e.err : (e.err as { message?: string } | undefined)?.message;
    return `${e.level}: ${e.msg ?? ""}${err ? `: ${err}` : ""}`;
  }
  return undefined;
}

export interface RunLog {
  file: string;
  server: Logger;
  gateway: Logger;
  /** Writes out what is buffered and closes the file (before the process exits). */
  close(): Promise<void>;
}

/** Loggers for the run's server and gateway, writing to `file` and summarizing on `terminal`. */
export function openRunLog(file: string, level: string, terminal: NodeJS.WritableStream): RunLog {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const out = fs.createWriteStream(file, { flags: "a" });
  const destination = {
    write(line: string) {
      out.write(line);
      let entry: Entry;
      try {
        entry = JSON.parse(line) as Entry;
      } catch {
        return true;
      }
      const short = terminalLine(entry);
      if (short) terminal.write(`${short}\n`);
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  return {
    file,
    server: createLogger({ level, name: SERVER_LOGGER, destination }),
    gateway: createLogger({ level, name: GATEWAY_LOGGER, destination }),
    close: () => new Promise<void>((resolve) => out.end(() => resolve())),
  };
}
