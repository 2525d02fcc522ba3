// Waits until the machine's CPUs are quiet before a measured run. After a burst of work, ggml's threadpool workers
// (Gantry's and llama-server's alike, poll level 50) spin for a few hundred ms waiting for the next graph; a run
// started
// inside that tail shares the cores with the previous side's spinning threads (measured: ~3.5 ms of foreign CPU per
// generated token at one stream), which would charge one side's idle cost to the other.
import fs from "node:fs";

interface CpuTimes {
  busy: number;
  total: number;
}

function cpuTimes(): CpuTimes | undefined {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves once a `windowMs` window saw the CPUs less than `busyBelow` busy (fraction of all CPUs), or after `maxMs`.
 * Without /proc/stat it sleeps `fallbackMs`.
 */
export async function settle(
  opts: { windowMs?: number; busyBelow?: number; maxMs?: number; fallbackMs?: number } = {},
): Promise<void> {
  const windowMs = opts.windowMs ?? 100,
    busyBelow = opts.busyBelow ?? 0.1,
    maxMs = opts.maxMs ?? 3000;
  const deadline = performance.now() + maxMs;
  let prev = cpuTimes();
  if (!prev) {
    await sleep(opts.fallbackMs ?? 500);
    return;
  }
  while (performance.now() < deadline) {
    await sleep(windowMs);
    const now = cpuTimes()!;
    const total = now.total - prev.total;
    if (total > 0 && (now.busy - prev.busy) / total < busyBelow) return;
    prev = now;
  }
}

/** One round of a paired measurement: `a` then `b` on even rounds, `b` then `a` on odd ones (neither always first). */
export async function inTurn(round: number, a: () => Promise<void>, b: () => Promise<void>): Promise<void> {
  const [first, second] = round % 2 === 0 ? [a, b] : [b, a];
  await first();
  await second();
}
