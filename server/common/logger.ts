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

/** A buffered destination writes when this much is pending (and at the latest every 200 ms). */
const WRITE_AT = 64 * 1024;
/** Past this much pending (the destination does not take it), lines are dropped rather than memory used up. */
const MAX_PENDING = 16 * 1024 * 1024;

/**
 * A buffered log destination for a process that logs a line per request (the gateway): lines are appended to a string
 * and go out in blocks of 64 KiB, and at the latest every 200 ms. Blocks are written synchronously on the calling
 * thread (a 64 KiB write costs tens of microseconds, well under a microsecond per line), so exactly what was written is
 * known at every moment: a partial write or EAGAIN on a non-blocking pipe keeps the unwritten tail first in line and
 * tries again 10 ms later, and on exit the tail and everything pending are written in order (waiting up to 5 s for a
 * full pipe). An asynchronous write could be in the middle of a system call at exit, losing or repeating lines. pino's
 * own buffered destination (sonic-boom) spent 3-5 µs of CPU per line, a few per cent of a small proxied request.
 * `dest` is a file descriptor (1 = stdout) or a path (appended to).
 */
export function bufferedDestination(dest: number | string = 1): DestinationStream & { flushSync(): void } {
  const fd = typeof dest === "number" ? dest : fs.openSync(dest, "a");
  let pending = "";
  /** The unwritten tail of the block being written (a full non-blocking pipe took only part of it, or none). */
  let tail: Buffer | null = null;
  let blocked = false;
  const retry = (): void => {
    blocked = false;
    send();
  };
  /** Writes the tail and then what is pending; false when the destination is full (EAGAIN) and some is left. */
  const writeOut = (): boolean => {
    for (;;) {
      if (tail === null) {
        if (pending === "") return true;
        tail = Buffer.from(pending);
        pending = "";
      }
      try {
        const n = fs.writeSync(fd, tail);
        tail = n < tail.length ? tail.subarray(n) : null;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "EAGAIN") return false;
        tail = null; // failed with nowhere to report it: the block is dropped, later lines still go out
      }
    }
  };
  const send = (): void => {
    if (blocked || writeOut()) return;
    blocked = true;
    setTimeout(retry, 10).unref();
  };
  const flushSync = (): void => {
    const sleep = new Int32Array(new SharedArrayBuffer(4));
    for (const until = Date.now() + 5000; !writeOut() && Date.now() < until;) Atomics.wait(sleep, 0, 0, 1);
  };
  setInterval(send, 200).unref();
  process.once("exit", flushSync);
  return {
    write(line: string) {
      if (pending.length < MAX_PENDING) pending += line;
      if (pending.length >= WRITE_AT) send();
    },
    flushSync,
  };
}

/** A logger that discards everything (tests and library defaults). */
export const silentLogger: Logger = pino({ level: "silent" });

/**
 * A cheap writer of one kind of info line, for a process that logs a line per request (the gateway's access log): the
 * caller builds the fields (the inside of a JSON object, e.g. `"status":200`, never keys or prompts), and the line
 * goes to the logger's destination in pino's own format (level, time: `at` or now, bindings, fields, msg), skipping
 * pino's serialisation and redaction of a whole object (about a tenth of a small proxied request's CPU time). Nothing
 * is written when the logger's level is above info.
 */
export function infoLineWriter(logger: Logger): (fields: string, msg: string, at?: number) => void {
  const l = logger as unknown as Record<symbol, unknown>;
  const stream = l[pino.symbols.streamSym] as { write(s: string): unknown } | undefined;
  const bindings = String(l[pino.symbols.chindingsSym] ?? "");
  let lastMs = 0,
    lastIso = "";
  return (fields, msg, at) => {
    if (!stream || logger.levelVal > 30) return;
    const now = at ?? Date.now();
    if (now !== lastMs) {
      lastMs = now;
      lastIso = new Date(now).toISOString();
    }
    stream.write(`{"level":"info","time":"${lastIso}"${bindings},${fields},"msg":${JSON.stringify(msg)}}\n`);
  };
}
