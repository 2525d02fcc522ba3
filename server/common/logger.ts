// Structured JSON logs (pino). Created once in a process's main and passed down; never logs prompts or keys.
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

/**
 * A buffered log destination for a process that logs a line per request (the gateway): lines go out in blocks of
 * 4 KiB, and at the latest every 200 ms, instead of one write system call per line (a measurable share of a small
 * proxied request); whatever is pending is written on exit. `dest` is a file descriptor (1 = stdout) or a path.
 */
export function bufferedDestination(dest: number | string = 1): DestinationStream {
  const out = pino.destination({ dest, sync: false, minLength: 4096 });
  const flush = () => {
    try {
      out.flush();
    } catch {
      // not open yet, or closed: the next flush or exit writes it
    }
  };
  setInterval(flush, 200).unref();
  process.once("exit", () => {
    try {
      out.flushSync();
    } catch {
      // nothing more can be done at exit
    }
  });
  return out;
}

/** A logger that discards everything (tests and library defaults). */
export const silentLogger: Logger = pino({ level: "silent" });

/**
 * A cheap writer of one kind of info line, for a process that logs a line per request (the gateway's access log): the
 * caller builds the fields (the inside of a JSON object, e.g. `"status":200`, never keys or prompts), and the line
 * goes to the logger's destination in pino's own format (level, time, bindings, fields, msg), skipping pino's
 * serialisation and redaction of a whole object (about a tenth of a small proxied request's CPU time). Nothing is
 * written when the logger's level is above info.
 */
export function infoLineWriter(logger: Logger): (fields: string, msg: string) => void {
  const l = logger as unknown as Record<symbol, unknown>;
  const stream = l[pino.symbols.streamSym] as { write(s: string): unknown } | undefined;
  const bindings = String(l[pino.symbols.chindingsSym] ?? "");
  let lastMs = 0,
    lastIso = "";
  return (fields, msg) => {
    if (!stream || logger.levelVal > 30) return;
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      lastIso = new Date(now).toISOString();
    }
    stream.write(`{"level":"info","time":"${lastIso}"${bindings},${fields},"msg":${JSON.stringify(msg)}}\n`);
  };
}
