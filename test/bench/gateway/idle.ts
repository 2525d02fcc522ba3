// Memory of idle client connections: the resident set of the gateway (and, for comparison, of the minimal Node proxy
// and nginx) before and after 1,000 keep-alive connections that each made one request and then stay idle, as
// clients of a busy front door do between calls.
//   node test/bench/gateway/idle.ts [connections]        (or GANTRY_BENCH_GATEWAY=idle npm run bench gateway)
import fs from "node:fs";
import net from "node:net";
import { printTable } from "../table.ts";
import { proxiesOnStandIn } from "./cpu.ts";

const PATH = "/acme/chat/api/version";

/** Resident set of a process and its children (nginx: master and worker), in KiB. */
function rssKiB(pid: number): number {
  let total = 0;
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    try {
      const status = fs.readFileSync(`/proc/${pids[i]}/status`, "utf8");
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const kids = fs.readFileSync(`/proc/${pids[i]}/task/${pids[i]}/children`, "utf8").trim();
      if (kids) pids.push(...kids.split(" ").map(Number));
    } catch {
      // gone
    }
  }
  return total;
}

/** `n` connections that each get one answer and then stay open; resolves once every answer is in. */
async function idleClients(port: number, auth: string, n: number): Promise<net.Socket[]> {
  const request = `GET ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n\r\n`;
  const sockets: net.Socket[] = [];
  for (let i = 0; i < n; i += 100)
    await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, async () => {
        const s = net.connect(port, "127.0.0.1");
        sockets.push(s);
        await new Promise((r) => s.once("connect", r));
        s.write(request);
        await new Promise<void>((resolve) => {
          let text = "";
          s.setEncoding("latin1").on("data", (d: string) => {
            text += d;
            const end = text.indexOf("\r\n\r\n");
            const m = end >= 0 ? /content-length: *(\d+)/i.exec(text.slice(0, end)) : null;
            if (m && text.length >= end + 4 + Number(m[1])) resolve();
          });
        });
      }),
    );
  return sockets;
}

export interface IdleRow {
  target: string;
  beforeMiB: number;
  withIdleMiB: number;
  perConnectionKiB: number;
}

export async function benchIdleConnections(n = 1000): Promise<IdleRow[]> {
  const p = await proxiesOnStandIn();
  const { key, nginx } = p;
  const rows: IdleRow[] = [];
  try {
    const targets = [
      { name: "gantry gateway", port: p.ports.gw, pid: p.gw.proc.pid! },
      { name: "floor: minimal Node proxy", port: p.ports.min, pid: p.minimal.proc.pid! },
      ...(nginx ? [{ name: "nginx 1 worker", port: p.ports.ng, pid: nginx.pid }] : []),
    ];
    for (const t of targets) {
      await idleClients(t.port, `Key ${key}`, 20).then((s) => s.forEach((x) => x.destroy())); // warm-up
      await new Promise((r) => setTimeout(r, 500));
      const before = rssKiB(t.pid);
      const sockets = await idleClients(t.port, `Key ${key}`, n);
      await new Promise((r) => setTimeout(r, 500));
      const after = rssKiB(t.pid);
      for (const s of sockets) s.destroy();
      rows.push({
        target: t.name,
        beforeMiB: before / 1024,
        withIdleMiB: after / 1024,
        perConnectionKiB: (after - before) / n,
      });
    }
  } finally {
    await p.stop();
  }
  return rows;
}

export function printIdleTable(rows: IdleRow[], n = 1000): void {
  printTable(
    `Gateway: resident memory with ${n} idle keep-alive client connections (each made one request), VmRSS before and with them`,
    ["process", "RSS before MiB", `RSS with ${n} idle MiB`, "KiB per connection"],
    rows.map((r) => [r.target, r.beforeMiB, r.withIdleMiB, r.perConnectionKiB]),
  );
}

if (import.meta.main) {
  const n = Number(process.argv[2] ?? 1000);
  printIdleTable(await benchIdleConnections(n), n);
}
