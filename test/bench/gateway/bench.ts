// `npm run bench gateway`: the gateway against going direct and against nginx, side by side in one run, on the same
// upstream `gantry serve`:
// - small non-streaming requests (GET /api/version: the proxy's own cost, not the model's): latency at one
//   connection (p50, p99; added = through − direct) and requests/s at 32 connections, auth on, interleaved rounds;
// - tokens/s of a long stream (SmolLM2, 256 tokens, NDJSON) through the gateway and through nginx against direct,
//   interleaved rounds;
// - cold start to first token from zero replicas (the test control plane, operator and gateway processes, a pod of
//   the process runtime) against the same model's own start: `gantry serve --model` spawned locally to first token.
// Load generators run as their own processes (load.ts). Loopback and the test cluster's pod addresses only.
import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { smollm2Path } from "../../support/models.ts";
import { createModel, freePort, GANTRY, startTestServer } from "../../support/server.ts";
import { postStreamingLines } from "../stream-client.ts";
import { median } from "../table.ts";
import { nginxBinary, startNginx } from "./nginx.ts";

const run = promisify(execFile);
const HERE = import.meta.dirname;

export interface ProxyRow {
  target: string;
  p50Ms: number;
  p99Ms: number;
  addedP50Ms: number;
  addedP99Ms: number;
  rps32: number;
  vsNginx: number;
}

export interface GatewayBenchResult {
  proxy: ProxyRow[] | undefined;
  stream:
    | { directTps: number; gatewayTps: number; ratio: number; nginxTps?: number; nginxRatio?: number; rounds: number }
    | undefined;
  rounds: number;
  nginx: string | undefined;
  /** Load averages (1 min) before and after the run: the machine is shared. */
  load: { before: number; after: number };
}

async function load(url: string, auth: string, conns: number, amount: number, mode?: "latency") {
  const r = await run(
    process.execPath,
    [path.join(HERE, "load.ts"), url, auth, String(conns), String(amount), ...(mode ? [mode] : [])],
    {
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(r.stdout) as { p50: number; p99: number; rps: number; errors: number };
}

/** Spawns a benchmark helper (a script here, or a path) and resolves with its first stdout line (once it listens). */
async function startHelper(script: string, args: string[]): Promise<{ line: string; stop(): void }> {
  const proc = spawn(process.execPath, [path.isAbsolute(script) ? script : path.join(HERE, script), ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
    proc.once("exit", (c) => reject(new Error(`${script} exited with ${c}`)));
  });
  return { line, stop: () => proc.kill("SIGTERM") };
}

/** Which parts to run: GANTRY_BENCH_GATEWAY=proxy,stream,cpu,idle,log,cold,usage (default: all). */
export function gatewayParts(): Set<string> {
  const v = process.env.GANTRY_BENCH_GATEWAY;
  return new Set(v ? v.split(",").map((x) => x.trim()) : ["proxy", "stream", "cpu", "idle", "log", "cold", "usage"]);
}

export async function benchGateway(
  opts: { rounds?: number; seconds?: number; latencyCount?: number; parts?: Set<string> } = {},
): Promise<GatewayBenchResult> {
  const rounds = opts.rounds ?? 3,
    seconds = opts.seconds ?? 5,
    latencyCount = opts.latencyCount ?? 3000,
    parts = opts.parts ?? gatewayParts();
  const loadBefore = os.loadavg()[0]!;
  const srv = await startTestServer({
    env: { GANTRY_LOG_LEVEL: "warn", GANTRY_KEEP_ALIVE: "-1", GANTRY_NUM_PARALLEL: "1" },
  });
  const gwPort = await freePort(),
    ngPort = await freePort(),
    minPort = await freePort();
  const gw = await startHelper("gateway-process.ts", [String(gwPort), srv.url]);
  const key = gw.line;
  const auth = `Key ${key}`;
  const bin = nginxBinary();
  const nginx =
    bin && (parts.has("proxy") || parts.has("stream")) ? await startNginx(bin, ngPort, srv.port, key) : undefined;
  const minimal = parts.has("proxy")
    ? await startHelper("minimal-proxy.ts", [String(minPort), srv.url, key])
    : undefined;
  // Another checkout's gateway in the same rounds (GANTRY_BENCH_GATEWAY_BEFORE=<its root>): a change against the code
  // before it, on the same machine at the same moment.
  const beforeDir = process.env.GANTRY_BENCH_GATEWAY_BEFORE;
  const beforePort = await freePort();
  const before =
    beforeDir && parts.has("proxy")
      ? await startHelper(path.join(path.resolve(beforeDir), "test/bench/gateway/gateway-process.ts"), [
          String(beforePort),
          srv.url,
        ])
      : undefined;
  try {
    let proxy: ProxyRow[] | undefined;
    if (parts.has("proxy")) {
      const targets = [
        { name: "direct (gantry serve)", url: `${srv.url}/api/version`, auth: "-" },
        { name: "gantry gateway (Key auth)", url: `http://127.0.0.1:${gwPort}/acme/chat/api/version`, auth },
        ...(nginx
          ? [{ name: "nginx 1 worker (header check)", url: `http://127.0.0.1:${ngPort}/acme/chat/api/version`, auth }]
          : []),
        { name: "floor: minimal Node proxy", url: `http://127.0.0.1:${minPort}/acme/chat/api/version`, auth },
        ...(before
          ? [
              {
                name: `gantry gateway before (${path.basename(path.resolve(beforeDir!))})`,
                url: `http://127.0.0.1:${beforePort}/acme/chat/api/version`,
                auth: `Key ${before.line}`,
              },
            ]
          : []),
      ];
      const lat = new Map<string, { p50: number[]; p99: number[]; rps: number[] }>(
        targets.map((t) => [t.name, { p50: [], p99: [], rps: [] }]),
      );
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? targets : [...targets].reverse();
        for (const t of order) {
          const l = await load(t.url, t.auth, 1, latencyCount, "latency");
          const x = lat.get(t.name)!;
          x.p50.push(l.p50);
          x.p99.push(l.p99);
        }
        for (const t of order) lat.get(t.name)!.rps.push((await load(t.url, t.auth, 32, seconds)).rps);
      }
      const direct = lat.get(targets[0]!.name)!;
      const ng = nginx ? lat.get(targets[2]!.name)! : undefined;
      proxy = targets.map((t, i) => {
        const x = lat.get(t.name)!;
        return {
          target: t.name,
          p50Ms: median(x.p50),
          p99Ms: median(x.p99),
          addedP50Ms: i === 0 ? 0 : median(x.p50.map((v, k) => v - direct.p50[k]!)),
          addedP99Ms: i === 0 ? 0 : median(x.p99.map((v, k) => v - direct.p99[k]!)),
          rps32: median(x.rps),
          vsNginx: ng ? median(x.rps.map((v, k) => v / ng.rps[k]!)) : Number.NaN,
        };
      });
    }
    const stream = parts.has("stream")
      ? await benchStream(srv.url, gwPort, nginx ? ngPort : undefined, auth, rounds)
      : undefined;
    return { proxy, stream, rounds, nginx: bin, load: { before: loadBefore, after: os.loadavg()[0]! } };
  } finally {
    gw.stop();
    minimal?.stop();
    before?.stop();
    await nginx?.stop();
    await srv.stop();
  }
}

/**
 * Tokens/s of a long stream (SmolLM2, 256 tokens), direct, through the gateway and through nginx (the same proxy hop
 * without the gateway's work: on a machine where the proxy shares cores with the model, what any proxy costs) in
 * interleaved rounds.
 */
async function benchStream(upstream: string, gwPort: number, ngPort: number | undefined, auth: string, rounds: number) {
  await createModel(upstream, "smollm2", await smollm2Path());
  const tps = async (url: string, headers: Record<string, string>) => {
    let first = 0,
      last = 0,
      n = 0;
    await postStreamingLines(
      url,
      {
        model: "smollm2",
        prompt: "Tell me a long story about the sea.",
        stream: true,
        options: { num_predict: 256, temperature: 0, seed: 1 },
      },
      (line) => {
        const x = JSON.parse(line) as { response?: string; done?: boolean; error?: string };
        if (x.error) throw new Error(x.error);
        if (x.response) {
          n++;
          last = performance.now();
          if (!first) first = last;
        }
      },
      headers,
    );
    return (n - 1) / ((last - first) / 1000);
  };
  await tps(`${upstream}/api/generate`, {}); // load the model
  const d: number[] = [],
    g: number[] = [],
    n: number[] = [];
  const streamRounds = Math.max(3, rounds);
  for (let r = 0; r < streamRounds; r++) {
    const viaDirect = () => tps(`${upstream}/api/generate`, {}).then((x) => d.push(x));
    const viaGateway = () =>
      tps(`http://127.0.0.1:${gwPort}/acme/chat/api/generate`, { authorization: auth }).then((x) => g.push(x));
    const viaNginx = () =>
      ngPort === undefined
        ? Promise.resolve()
        : tps(`http://127.0.0.1:${ngPort}/acme/chat/api/generate`, { authorization: auth }).then((x) => n.push(x));
    const order = [viaDirect, viaGateway, viaNginx];
    for (const run of r % 2 === 0 ? order : order.reverse()) await run();
  }
  return {
    directTps: median(d),
    gatewayTps: median(g),
    ratio: median(g.map((x, i) => x / d[i]!)),
    ...(n.length ? { nginxTps: median(n), nginxRatio: median(n.map((x, i) => x / d[i]!)) } : {}),
    rounds: streamRounds,
  };
}

/** The model's own start: `gantry serve --model m` spawned on this machine, to its first streamed token. */
export async function localStartToFirstToken(modelsDir: string, model: string): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = spawn(process.execPath, [GANTRY, "serve", "--model", model], {
    env: {
      ...process.env,
      GANTRY_HOST: `127.0.0.1:${port}`,
      GANTRY_MODELS: modelsDir,
      GANTRY_LOG_LEVEL: "warn",
      GANTRY_KEEP_ALIVE: "-1",
    },
    stdio: "ignore",
  });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (performance.now() - t0 > 120_000) throw new Error("gantry serve did not start");
      await new Promise((r) => setTimeout(r, 10));
    }
    let ttft = 0;
    await postStreamingLines(
      `http://127.0.0.1:${port}/api/generate`,
      { model, prompt: "hi", options: { num_predict: 2 } },
      (line) => {
        if ((JSON.parse(line) as { response?: string }).response) {
          ttft = performance.now() - t0;
          return true;
        }
      },
    );
    return ttft;
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
  }
}

/** A store holding `model` from `file`, for localStartToFirstToken. */
export async function storeWith(model: string, file: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-store-"));
  const srv = await startTestServer({ modelsDir: dir });
  try {
    await createModel(srv.url, model, file);
  } finally {
    await srv.stop();
  }
  return dir;
}
