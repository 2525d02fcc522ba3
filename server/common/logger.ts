// Structured JSON logs (pino). Created once in a process's main and passed down; never logs prompts or keys.
import fs from "node:fs";
import { pino, type DestinationStream, type Logger as PinoLogger } from "pino";

export type Logger = PinoLogger;

export function createLogger(opts: { level?: string; name?: string; destination?: DestinationStream } = {}): Logger {
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

/** A buffered destination writes when this much is pending, and at the latest every FLUSH_MS. */
const WRITE_AT = 4096;
const FLUSH_MS = 200;

/**
 * A buffered log destination for a process that logs a line per request (the gateway): pino's own (sonic-boom), lines
 * gathered and written in blocks of 4 KiB, and at the latest every 200 ms; pino writes what is pending on exit.
 * `dest` is a file descriptor (1 = stdout) or a path (appended to).
 */
export function bufferedDestination(dest: number | string = 1): DestinationStream & { flushSync(): void } {
  const fd = typeof dest === "number" ? dest : fs.openSync(dest, "a"); // open now: ready for writes at once
  // Blocks are written synchronously: an asynchronous write still in flight when the process exits loses its lines.
  const out = pino.destination({ dest: fd, minLength: WRITE_AT, sync: true });
  setInterval(() => out.flush(), FLUSH_MS).unref();
  // The last block, also for a destination no pino logger owns (pino flushes the ones it owns on exit too).
  process.once("exit", () => {
    try {
      out.flushSync();
    } catch {
      // Already ended (destroyed): nothing is pending.
    }
  });
  return out;
}

/** A logger that discards everything (tests and library defaults). */
export const silentLogger: Logger = pino({ level: "silent" });
