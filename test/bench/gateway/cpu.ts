// CPU time per proxied request: the gateway, the minimal Node proxy (the floor) and nginx, each in front of the same
// fast stand-in upstream (stand-in.ts), counted from the proxy process's own CPU time (process.cpuUsage over IPC; for
// nginx, /proc). Unlike requests/s, CPU per request is not skewed by other load on the machine, so a change to the
// request path can be measured on a shared machine. Small GETs with `Authorization: Key`, as the gateway benchmark.
//   node test/bench/gateway/cpu.ts [requests [rounds]]        (or GANTRY_BENCH_GATEWAY=cpu npm run bench gateway)
//   GANTRY_BENCH_CPU_TARGETS=gateway,minimal (of direct, gateway, minimal, nginx): only those rows.
//   GANTRY_BENCH_CPU_PROF=<dir>: the gateway also runs with --cpu-prof; its hottest functions (self time) are printed.
//   GANTRY_BENCH_CPU_BODY=chat: a small POST /v1/chat/completions instead of the GET (the body read, parsed and sent).
//   GANTRY_BENCH_GATEWAY_BEFORE=<another checkout>: its gateway too, in the same rounds (a change against before it).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Pool } from "undici";
import { freePort } from "../../support/server.ts";
import { median, printTable } from "../table.ts";
import { nginxBinary, startNginx } from "./nginx.ts";

const HERE = import.meta.dirname;
const CHAT = JSON.stringify({ model: "m", messages: [{ role: "user", content: "Hello there!" }], max_tokens: 8 });
const REQUEST =
  process.env.GANTRY_BENCH_CPU_BODY === "chat"
    ? { path: "/acme/chat/v1/chat/completions", method: "POST" as const, body: CHAT }
    : { path: "/acme/chat/api/version", method: "GET" as const };

export interface Helper {
  proc: ChildProcess;
  line: string;
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts a helper with an IPC channel; resolves with its first stdout line (once it listens). */
export async function helper(script: string, args: string[], nodeArgs: string[] = []): Promise<Helper> {
  const proc = spawn(
    process.execPath,
    [...nodeArgs, path.isAbsolute(script) ? script : path.join(HERE, script), ...args],
    {
      stdio: ["ignore", "pipe", "inherit", "ipc"],
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
    proc.once("exit", (c) => reject(new Error(`${script} exited with ${c}`)));
  });
  return {
    proc,
    line,
    cpu: () =>
      new Promise((resolve) => {
        proc.once("message", (m) => {
          const u = m as { user: number; system: number };
          resolve(u.user + u.system);
        });
        proc.send("cpu");
      }),
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

/** CPU µs of a process and its children (nginx: master and worker), from /proc (Linux). */
function procCpu(pid: number): number {
  const tick = 1e6 / 100; // USER_HZ is 100 on Linux
  let total = 0;
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    const p = pids[i]!;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(f[11]) + Number(f[12])) * tick; // utime, stime
      const kids = fs.readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim();
      if (kids) pids.push(...kids.split(" ").map(Number));
    } catch {
      // gone
    }
  }
  return total;
}

/** Sends `n` GETs over `conns` keep-alive connections (after a warm-up) and returns the proxy's CPU µs per request. */
async function measure(
  origin: string,
  auth: string,
  conns: number,
  n: number,
  cpu: () => Promise<number>,
  upstreamCpu: () => Promise<number>,
) {
  const pool = new Pool(origin, { connections: conns, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { authorization: auth, "content-type": "application/json" };
  let errors = 0,
    sent = 0;
  const one = async () => {
    const r = await pool.request({ ...REQUEST, headers });
    await r.body.dump();
    if (r.statusCode !== 200) errors++;
  };
  const burst = async (count: number) => {
    sent = 0;
    await Promise.all(
      Array.from({ length: conns }, async () => {
        while (sent++ < count) await one();
      }),
    );
  };
  await burst(Math.min(2000, n / 5)); // warm-up: JIT, connections
  const c0 = await cpu(),
    u0 = await upstreamCpu();
  await burst(n);
  const c1 = await cpu(),
    u1 = await upstreamCpu();
  await pool.close();
  if (errors) throw new Error(`${errors} requests failed`);
  return { proxyUs: (c1 - c0) / n, upstreamUs: (u1 - u0) / n };
}

/**
 * Where the gateway's busy time goes, from a .cpuprofile: the top functions by self time, and self time by file
 * (package or source file), as shares of the non-idle samples.
 */
function profileTop(file: string, top = 25): { functions: Array<[string, number]>; files: Array<[string, number]> } {
  const p = JSON.parse(fs.readFileSync(file, "utf8")) as {
    nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const fns = new Map<string, number>(),
    files = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    if (f.functionName === "(idle)") return;
    const url = f.url
      .replace(/^file:\/\//, "")
      .replace(/^.*\/node_modules\/((@[^/]+\/)?[^/]+)\/.*$/, "$1")
      .replace(/^.*\/(server|test)\//, "$1/");
    const dt = p.timeDeltas[i] ?? 0;
    const name = `${f.functionName || "(anonymous)"} ${url}${url ? `:${f.lineNumber + 1}` : ""}`;
    fns.set(name, (fns.get(name) ?? 0) + dt);
    const where = url || f.functionName;
    files.set(where, (files.get(where) ?? 0) + dt);
    busy += dt;
  });
  const topOf = (m: Map<string, number>): Array<[string, number]> =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, (100 * v) / busy]);
  return { functions: topOf(fns), files: topOf(files) };
}

/** The stand-in upstream and in front of it the gateway, the minimal Node proxy and nginx (when it can be had). */
export async function proxiesOnStandIn(nodeArgs: { gateway?: string[]; minimal?: string[] } = {}) {
  const ports = {
    up: await freePort(),
    gw: await freePort(),
    min: await freePort(),
    ng: await freePort(),
    before: await freePort(),
  };
  const upstream = await helper("stand-in.ts", [String(ports.up)]);
  const origin = `http://127.0.0.1:${ports.up}`;
  const gw = await helper("gateway-process.ts", [String(ports.gw), origin], nodeArgs.gateway ?? []);
  const key = gw.line;
  const minimal = await helper("minimal-proxy.ts", [String(ports.min), origin, key], nodeArgs.minimal ?? []);
  const bin = nginxBinary();
  const nginx = bin ? await startNginx(bin, ports.ng, ports.up, key) : undefined;
  const beforeDir = process.env.GANTRY_BENCH_GATEWAY_BEFORE;
  const before = beforeDir
    ? await helper(path.join(path.resolve(beforeDir), "test/bench/gateway/gateway-process.ts"), [
        String(ports.before),
        origin,
      ])
    : undefined;
  const stop = async () => {
    await gw.stop();
    await before?.stop();
    await minimal.stop();
    await nginx?.stop();
    await upstream.stop();
  };
  return { ports, upstream, gw, minimal, nginx, before, key, stop };
}

export async function benchGatewayCpu(n = 20_000, rounds = 3): Promise<void> {
  const profDir = process.env.GANTRY_BENCH_CPU_PROF;
  const p = await proxiesOnStandIn(
    profDir
      ? {
          gateway: ["--cpu-prof", `--cpu-prof-dir=${profDir}`],
          minimal: ["--cpu-prof", `--cpu-prof-dir=${path.join(profDir, "minimal")}`],
        }
      : {},
  );
  const { upstream, gw, minimal, nginx, before } = p;
  const { up: upPort, gw: gwPort, min: minPort, ng: ngPort } = p.ports;
  const auth = `Key ${p.key}`;
  const rows: Array<Array<string | number>> = [];
  try {
    const only = process.env.GANTRY_BENCH_CPU_TARGETS?.split(",");
    const targets = [
      { id: "direct", name: "direct (stand-in upstream)", port: upPort, cpu: upstream.cpu, auth },
      { id: "gateway", name: "gantry gateway (Key auth)", port: gwPort, cpu: gw.cpu, auth },
      { id: "minimal", name: "floor: minimal Node proxy", port: minPort, cpu: minimal.cpu, auth },
      ...(nginx
        ? [
            {
              id: "nginx",
              name: "nginx 1 worker (header check)",
              port: ngPort,
              cpu: async () => procCpu(nginx.pid),
              auth,
            },
          ]
        : []),
      ...(before
        ? [
            {
              id: "before",
              name: "gantry gateway before",
              port: p.ports.before,
              cpu: before.cpu,
              auth: `Key ${before.line}`,
            },
          ]
        : []),
    ].filter((t) => !only || only.includes(t.id));
    const got = new Map(
      targets.map((t) => [t.name, { one: [] as number[], many: [] as number[], up: [] as number[] }]),
    );
    for (let r = 0; r < rounds; r++)
      for (const t of r % 2 === 0 ? targets : [...targets].reverse()) {
        const o = `http://127.0.0.1:${t.port}`;
        const x = got.get(t.name)!;
        x.one.push((await measure(o, t.auth, 1, Math.round(n / 4), t.cpu, upstream.cpu)).proxyUs);
        const many = await measure(o, t.auth, 32, n, t.cpu, upstream.cpu);
        x.many.push(many.proxyUs);
        x.up.push(many.upstreamUs);
      }
    for (const t of targets) {
      const x = got.get(t.name)!;
      const direct = t.port === upPort;
      rows.push([t.name, direct ? 0 : median(x.one), direct ? 0 : median(x.many), median(x.up)]);
    }
  } finally {
    await p.stop();
  }
  printTable(
    `Gateway: CPU time per request of the proxy process (µs; process.cpuUsage, nginx from /proc), small ${REQUEST.method === "GET" ? "GETs" : "chat POSTs"} with Authorization: Key to a stand-in upstream, ${n / 4} requests at 1 connection and ${n} at 32, medians of ${rounds} interleaved rounds; little skewed by other load`,
    ["path", "proxy CPU µs/req @1", "proxy CPU µs/req @32", "upstream CPU µs/req @32"],
    rows,
  );
  if (profDir) {
    const prof = fs
      .readdirSync(profDir)
      .filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => path.join(profDir, f))
      .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
    if (prof) {
      const t = profileTop(prof);
      printTable(`Gateway CPU profile ${prof}: self time by function, % of busy`, ["function", "%"], t.functions);
      printTable("Self time by file or package, % of busy", ["file", "%"], t.files);
    }
  }
}

if (import.meta.main) await benchGatewayCpu(Number(process.argv[2] ?? 20_000), Number(process.argv[3] ?? 3));
