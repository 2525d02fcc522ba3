// Thread count for inference. llama.cpp runs far slower when it oversubscribes cores (hyper-threads included), so the
// default is the number of physical cores, not os.availableParallelism() (logical CPUs).
import fs from "node:fs";
import os from "node:os";

/** Counts distinct (physical id, core id) pairs in /proc/cpuinfo text; 0 when the text has no such fields. */
export function countPhysicalCores(cpuinfo: string): number {
  const cores = new Set<string>();
  for (const block of cpuinfo.split(/\n\s*\n/)) {
    const core = /^core id\s*:\s*(\d+)/m.exec(block)?.[1];
    if (core === undefined) continue;
    const socket = /^physical id\s*:\s*(\d+)/m.exec(block)?.[1] ?? "0";
    cores.add(`${socket}:${core}`);
  }
  return cores.size;
}

/** Physical cores of this machine, falling back to the logical CPU count where /proc/cpuinfo is unavailable. */
export function physicalCores(): number {
  try {
    const n = countPhysicalCores(fs.readFileSync("/proc/cpuinfo", "utf8"));
    if (n > 0) return n;
  } catch {
    // not Linux: fall through
  }
  return os.availableParallelism();
}

/** `requested` threads, or the physical core count when 0. */
export const resolveThreads = (requested: number): number => (requested > 0 ? requested : physicalCores());
