// Added latency at one connection, robust to other load on the machine: the same small GET is sent in turn to the
// stand-in upstream directly and through each proxy (the gateway, the minimal Node proxy with each upstream client),
// one request at a time over one keep-alive connection each, from a raw-socket client (no client library in the
// timings). Each round sends one request to every target in rotating order, so drift in machine load hits all alike;
// the added latency of a target is the median of its per-round differences to the direct request.
//   node test/bench/gateway/latency.ts [rounds]
//   GANTRY_BENCH_LATENCY_TARGETS=gateway,dispatch (of gateway, dispatch, request, agent): only those proxies.
import net from "node:net";
import { freePort } from "../../support/server.ts";
import { median, printTable } from "../table.ts";
import { helper, type Helper } from "./cpu.ts";

const PATH = "/acme/chat/api/version";

/** One keep-alive connection that sends a fixed GET and resolves when the whole (content-length) answer is in. */
export async function rawClient(port: number, path: string, auth: string) {
  const socket = net.connect(port, "127.0.0.1");
  socket.setNoDelay(true);
  await new Promise((r) => socket.once("connect", r));
  const request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n\r\n`);
  let buf = "";
  let done: ((status: number) => void) | undefined;
  socket.setEncoding("latin1");
  socket.on("data", (d: string) => {
    buf += d;
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const m = /\r\ncontent-length: *(\d+)/i.exec(buf.slice(0, end));
    if (!m) throw new Error(`no content-length in ${buf.slice(0, end)}`);
    if (buf.length < end + 4 + Number(m[1])) return;
    const status = Number(buf.slice(9, 12));
    buf = "";
    done?.(status);
  });
  return {
    once(): Promise<number> {
      return new Promise((resolve) => {
        done = resolve;
        socket.write(request);
      });
    },
    close: () => socket.destroy(),
  };
}

export async function benchGatewayLatency(rounds = 5000): Promise<void> {
  const only = process.env.GANTRY_BENCH_LATENCY_TARGETS?.split(",");
  const upPort = await freePort();
  const helpers: Helper[] = [];
  const upstream = await helper("stand-in.ts", [String(upPort)]);
  helpers.push(upstream);
  const origin = `http://127.0.0.1:${upPort}`;
  const targets: Array<{ name: string; port: number; path: string }> = [
    { name: "direct", port: upPort, path: "/api/version" },
  ];
  try {
    const gwPort = await freePort();
    const gw = await helper("gateway-process.ts", [String(gwPort), origin]);
    helpers.push(gw);
    const key = gw.line;
    if (!only || only.includes("gateway")) targets.push({ name: "gantry gateway", port: gwPort, path: PATH });
    for (const c of ["dispatch", "request", "agent"]) {
      if (only && !only.includes(c)) continue;
      const p = await freePort();
      helpers.push(await helper("minimal-proxy.ts", [String(p), origin, key, c]));
      targets.push({
        name:
          { dispatch: "minimal proxy, undici dispatch (as the gateway)", agent: "minimal proxy, node:http Agent" }[c] ??
          `minimal proxy, undici ${c}`,
        port: p,
        path: PATH,
      });
    }
    const clients = await Promise.all(targets.map((t) => rawClient(t.port, t.path, `Key ${key}`)));
    const ms = targets.map(() => [] as number[]);
    const total = rounds + 500; // the first 500 rounds warm up (JIT, connections) and are not counted
    for (let r = 0; r < total; r++)
      for (let j = 0; j < clients.length; j++) {
        const i = (r + j) % clients.length;
        const t = performance.now();
        const status = await clients[i]!.once();
        if (status !== 200) throw new Error(`${targets[i]!.name}: status ${status}`);
        if (r >= 500) ms[i]!.push(performance.now() - t);
      }
    for (const c of clients) c.close();
    const rows = targets.map((t, i) => {
      const x = ms[i]!;
      const diffs = x.map((v, k) => v - ms[0]![k]!);
      const sorted = [...x].sort((a, b) => a - b);
      return [t.name, median(x), sorted[Math.floor(sorted.length * 0.99)]!, i === 0 ? 0 : median(diffs)];
    });
    printTable(
      `Gateway: latency at one connection (ms), small GETs from a raw-socket client, ${rounds} interleaved rounds; added = median of per-round differences to direct`,
      ["path", "p50 ms", "p99 ms", "added p50 ms"],
      rows,
    );
  } finally {
    for (const h of helpers.reverse()) await h.stop();
  }
}

if (import.meta.main) await benchGatewayLatency(Number(process.argv[2] ?? 5000));
