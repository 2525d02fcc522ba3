// The cost of one access log line: the gateway's (a pino child logger into pino's buffered destination) against a
// line built by hand into a string written in 64 KiB blocks (the floor of any JSON line writer, what the gateway used
// before), and pino with its redaction pass left on. CPU µs per line in this process, to /dev/null; the decision
// record docs/decisions/0002-access-log-through-pino.md keeps the figures.
//   node test/bench/gateway/log-lines.ts [lines [rounds]]   (or GANTRY_BENCH_GATEWAY=log npm run bench gateway)
import fs from "node:fs";
import { bufferedDestination, createLogger } from "../../../server/common/logger.ts";
import { median, printTable } from "../table.ts";

const fields = (i: number) => ({
  requestId: "0123456789abcdef0123456789abcdef",
  org: "acme",
  app: "chat",
  method: "GET",
  path: "/api/version",
  status: 200,
  keyId: "0123456789abcdef",
  ms: 0.4 + (i % 7) / 10,
});

/** A hand-built line in pino's format, appended to a string and written in 64 KiB blocks. */
function handWriter(): (f: ReturnType<typeof fields>) => void {
  const fd = fs.openSync("/dev/null", "a");
  let pending = "";
  return (f) => {
    pending +=
      `{"level":"info","time":"${new Date().toISOString()}","name":"gantry-gateway","requestId":"${f.requestId}",` +
      `"org":"${f.org}","app":"${f.app}","method":"${f.method}","path":${JSON.stringify(f.path)},` +
      `"status":${f.status},"keyId":"${f.keyId}","ms":${f.ms},"msg":"request"}\n`;
    if (pending.length >= 65536) {
      fs.writeSync(fd, pending);
      pending = "";
    }
  };
}

export async function benchLogLines(lines = 100_000, rounds = 7): Promise<Array<[string, number]>> {
  const base = () => createLogger({ name: "gantry-gateway", destination: bufferedDestination("/dev/null") });
  const access = base().child({}, { redact: [] });
  const redacted = base().child({});
  const hand = handWriter();
  const writers: Array<[string, (i: number) => void]> = [
    ["pino child logger, no redaction (the gateway's access log)", (i) => access.info(fields(i), "request")],
    ["pino child logger with the redaction pass", (i) => redacted.info(fields(i), "request")],
    ["hand-built line, 64 KiB blocks (before)", (i) => hand(fields(i))],
  ];
  const us = new Map<string, number[]>(writers.map(([n]) => [n, []]));
  for (let r = 0; r < rounds; r++)
    for (const [name, write] of r % 2 ? [...writers].reverse() : writers) {
      const t = process.cpuUsage();
      for (let i = 0; i < lines; i++) write(i);
      const d = process.cpuUsage(t);
      us.get(name)!.push((d.user + d.system) / lines);
      await new Promise((r) => setTimeout(r, 50)); // pino's destination writes what it holds
    }
  return writers.map(([name]) => [name, median(us.get(name)!)]);
}

export function printLogTable(rows: Array<[string, number]>): void {
  const floor = rows.at(-1)![1];
  printTable(
    "Gateway: CPU µs per access log line (to /dev/null, in process, medians of interleaved rounds). Decision: pino unless it costs > 5 µs more than the hand-built line",
    ["writer", "µs per line", "more than hand-built µs"],
    rows.map(([name, v]) => [name, v, v - floor]),
  );
}

if (import.meta.main)
  printLogTable(await benchLogLines(Number(process.argv[2] ?? 100_000), Number(process.argv[3] ?? 7)));
