// The benchmark's HTTP load generator, run as its own process (so its CPU is not the proxy's): GETs one URL with a
// header, either closed-loop over N keep-alive connections for a duration (requests/s), or one request at a time
// (latency percentiles). undici's Pool, the lightest Node client. Prints one JSON line.
//   node load.ts <url> <authorization or -> <connections> <seconds>     → {"requests","rps","errors"}
//   node load.ts <url> <authorization or -> 1 <count> latency           → {"p50","p99","mean"} in ms
import { Pool } from "undici";

const [url, authHeader, conns, amount, mode] = process.argv.slice(2) as [string, string, string, string, string?];
const u = new URL(url);
const pool = new Pool(u.origin, { connections: Number(conns), pipelining: 1, keepAliveTimeout: 30_000 });
const headers = authHeader === "-" ? {} : { authorization: authHeader };
const path = u.pathname + u.search;

async function one(): Promise<number> {
  const r = await pool.request({ path, method: "GET", headers });
  await r.body.dump();
  return r.statusCode;
}

if (mode === "latency") {
  const n = Number(amount);
  for (let i = 0; i < 200; i++) await one(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const status = await one();
    ms.push(performance.now() - t);
    if (status !== 200) throw new Error(`status ${status}`);
  }
  ms.sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!;
  console.log(JSON.stringify({ p50: q(0.5), p99: q(0.99), mean: ms.reduce((s, x) => s + x, 0) / ms.length }));
} else {
  const c = Number(conns),
    until = performance.now() + Number(amount) * 1000;
  for (let i = 0; i < 100; i++) await one(); // warm-up
  let requests = 0,
    errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (performance.now() < until) {
        const status = await one().catch(() => 0);
        if (status === 200) requests++;
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ requests, rps: requests / seconds, errors }));
}
await pool.close();
