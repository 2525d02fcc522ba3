// CPU time per image request, by thread, for Gantry and llama-server --mmproj on the generated vision pair: the
// server process's utime + stime (and each thread's, grouped by thread name) over `n` sequential requests, each with a
// new image (so every request encodes one). CPU time counts only what the server's own threads ran, so a loaded
// machine skews it less than latency (run it twice or more, interleaved, and compare the lower figures). Usage:
//   node test/bench/vision-cpu.ts [requests=40] [gantry|llama|both] [KEY=VALUE gantry env ...]
import { llamaTools } from "./llama-cpp/tools.ts";
import { encodePng, patternImage } from "../support/images.ts";
import { processCpuMs, threadCpu } from "./process-cpu.ts";
import { startGantryVision, startLlamaServerVision, type VisionTarget } from "./vision.ts";

export interface CpuPerRequest {
  /** Whole process, per request (includes threads that came and went). */
  totalMs: number;
  wallMs: number;
  /** Per thread name, per request (threads alive at the end). */
  byName: Record<string, number>;
  /** Threads alive at the end, per name. */
  threads: Record<string, number>;
}

export async function cpuPerRequest(t: VisionTarget, n: number, seed: number, concurrency = 1): Promise<CpuPerRequest> {
  const before = threadCpu(t.pid);
  const total0 = processCpuMs(t.pid);
  const start = performance.now();
  for (let i = 0; i < n; i += concurrency)
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n - i) }, (_, j) =>
        t.ask(encodePng(patternImage(96, 96, seed + i + j))),
      ),
    );
  const wallMs = (performance.now() - start) / n;
  const totalMs = (processCpuMs(t.pid) - total0) / n;
  const byName: Record<string, number> = {};
  const threads: Record<string, number> = {};
  for (const [tid, { name, ms }] of threadCpu(t.pid)) {
    const used = (ms - (before.get(tid)?.ms ?? 0)) / n;
    byName[name] = (byName[name] ?? 0) + used;
    if (process.env.VISION_CPU_BY_THREAD && used > 0) byName[`${name}#${tid}`] = used;
    threads[name] = (threads[name] ?? 0) + 1;
  }
  return { totalMs, wallMs, byName, threads };
}

if (import.meta.main) {
  const n = Number(process.argv[2] ?? 40);
  const which = process.argv[3] ?? "both";
  const env = Object.fromEntries(process.argv.slice(4).map((kv) => kv.split("=", 2) as [string, string]));
  const targets: VisionTarget[] = [];
  if (which !== "llama") targets.push(await startGantryVision(env));
  if (which !== "gantry") targets.push(await startLlamaServerVision((await llamaTools(["llama-server"])).server));
  try {
    for (const t of targets) {
      for (let i = 0; i < 3; i++) await t.ask(encodePng(patternImage(96, 96, 500 + i))); // warm-up
      for (const c of [1, 4]) {
        const r = await cpuPerRequest(t, n, 10_000 * c, c);
        const names = Object.entries(r.byName)
          .filter(([, ms]) => ms > 0)
          .map(([name, ms]) => `${name}×${r.threads[name]} ${ms.toFixed(1)}`)
          .join(", ");
        console.log(
          `${t.label} c=${c}: CPU ${r.totalMs.toFixed(1)} ms/request, wall ${r.wallMs.toFixed(1)} ms/request; ${names}`,
        );
      }
    }
  } finally {
    for (const t of targets) await t.stop();
  }
}
