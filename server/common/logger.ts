// Structured JSON logs (pino). Created once in a process's main and passed down; never logs prompts or keys.
import { pino, type Logger as PinoLogger } from "pino";

export type Logger = PinoLogger;

export function createLogger(
  opts: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  return pino(
    {
      level: opts.level ?? "info",
      base: opts.name ? { name: opts.name } : {},
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          "req.headers.authorization",
          "req.headers.cookie",
          "headers.authorization",
          "authorization",
          "apiKey",
          "key",
          "*.prompt",
          "*.messages",
        ],
        censor: "[redacted]",
      },
    },
    opts.destination ?? process.stdout,
  );
}

/** A logger that discards everything (tests and library defaults). */
export const silentLogger: Logger = pino({ level: "silent" });
