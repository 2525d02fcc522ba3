// `npm run bench queue`: the queue on the broker (Debian's redis-server) in front of a stand-in pod that answers at
// once, the gateway in its own process (test/support/queue-gateway-main.ts).
//   overhead: submit → COMPLETED (seen on the status stream) against the same request made synchronously, one at a
//     time on a warm app;
//   accepted: submissions/s the gateway acknowledges (stored in the broker) with 64 connections, its workers draining
//     meanwhile;
//   drain: 10,000 queued requests run to the end; lost = submitted − completed (the stand-in counts distinct ids too).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Queue } from "bullmq";
import { Pool } from "undici";
import { startTestRedis } from "../support/redis.ts";
import { freePort, REPO } from "../support/server.ts";
import { median } from "./table.ts";

/** CPU seconds a process has used (user + system), from /proc. */
const cpuSeconds = (pid: number): number => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
};

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;

export interface QueueBench {
  overhead: { syncP50: number; queueP50: number; syncP90: number; queueP90: number; n: number };
  /** CPU ms per accepted submission of the gateway and of the broker (workers draining meanwhile included). */
  accepted: { perSecond: number; n: number; seconds: number; gatewayCpuMs: number; brokerCpuMs: number };
  drain: { n: number; completed: number; failed: number; distinctAtPod: number; seconds: number };
}

export async function benchQueue(o: { drain: number; overheadRounds: number }): Promise<QueueBench> {
  const redis = await startTestRedis();
  /** Distinct queued request ids the pod saw (a queued request's id is its request_id). */
  const ids = new Set<string>();
  const body = JSON.stringify({ object: "chat.completion", choices: [] });
  const pod = http.createServer((req, res) => {
    const id = String(req.headers["x-request-id"]);
    if (!id.startsWith("sync-")) ids.add(id);
    req.resume();
    req.once("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
      res.end(body);
    });
  });
  await new Promise<void>((r) => pod.listen(0, "127.0.0.1", () => r()));
  const port = await freePort();
  const gw: ChildProcess = spawn(process.execPath, ["test/support/queue-gateway-main.ts"], {
    cwd: REPO,
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      POD_URL: `http://127.0.0.1:${(pod.address() as AddressInfo).port}`,
      PORT: String(port),
      CONCURRENCY: "32",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise((r) => gw.stdout!.once("data", r));
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 64 });
  const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });
  const post = async (path: string, requestId?: string) => {
    const headers = { "content-type": "application/json", ...(requestId ? { "x-request-id": requestId } : {}) };
    const r = await pool.request({ method: "POST", path, headers, body: chat });
    return { status: r.statusCode, text: await r.body.text() };
  };
  try {
    // Overhead, interleaved: a synchronous call, then the same through the queue to COMPLETED on the status stream.
    const sync: number[] = [];
    const queued: number[] = [];
    for (let i = 0; i < o.overheadRounds + 20; i++) {
      let t = performance.now();
      await post("/local/echo/v1/chat/completions", `sync-${i}`);
      const s = performance.now() - t;
      t = performance.now();
      const sub = JSON.parse((await post("/_queue/local/echo/v1/chat/completions")).text) as { status_url: string };
      const r = await pool.request({ method: "GET", path: new URL(`${sub.status_url}/stream`).pathname });
      const text = await r.body.text();
      const q = performance.now() - t;
      if (!text.includes('"COMPLETED"')) throw new Error(`no COMPLETED on the stream: ${text.slice(0, 200)}`);
      // The first 20 warm up.
      if (i >= 20) {
        sync.push(s);
        queued.push(q);
      }
    }
    // Accepted submissions/s and the drain: `n` submissions from 64 connections at once.
    const n = o.drain;
    const cpu0 = [cpuSeconds(gw.pid!), cpuSeconds(redis.pid())];
    const t0 = performance.now();
    let next = 0;
    let refused = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < n) {
          next++;
          const r = await post("/_queue/local/echo/v1/chat/completions");
          if (r.status !== 200) refused++;
        }
      }),
    );
    const acceptedSeconds = (performance.now() - t0) / 1000;
    const cpu1 = [cpuSeconds(gw.pid!), cpuSeconds(redis.pid())];
    const q = new Queue("local/echo", { connection: { url: redis.url }, prefix: "gantry" });
    const total = n + o.overheadRounds + 20;
    let counts = await q.getJobCounts("completed", "failed");
    while ((counts.completed ?? 0) + (counts.failed ?? 0) < total - refused) {
      await new Promise((r) => setTimeout(r, 50));
      counts = await q.getJobCounts("completed", "failed");
    }
    const drainSeconds = (performance.now() - t0) / 1000;
    await q.close();
    return {
      overhead: {
        syncP50: median(sync),
        queueP50: median(queued),
        syncP90: pct(sync, 0.9),
        queueP90: pct(queued, 0.9),
        n: sync.length,
      },
      accepted: {
        perSecond: (n - refused) / acceptedSeconds,
        n: n - refused,
        seconds: acceptedSeconds,
        gatewayCpuMs: ((cpu1[0]! - cpu0[0]!) * 1000) / (n - refused),
        brokerCpuMs: ((cpu1[1]! - cpu0[1]!) * 1000) / (n - refused),
      },
      drain: {
        n: total,
        completed: counts.completed ?? 0,
        failed: counts.failed ?? 0,
        distinctAtPod: ids.size,
        seconds: drainSeconds,
      },
    };
  } finally {
    await pool.close();
    gw.kill("SIGTERM");
    pod.close();
    await redis.stop();
  }
}
