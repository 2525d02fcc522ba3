// CPU time of a process and of each of its threads, from /proc (Linux): utime + stime, in clock ticks of 10 ms. CPU
// time counts only what the process itself ran, so a loaded machine skews it less than wall time (not to nothing:
// contention still inflates it, most of all for threads that busy-wait). Ticks of 10 ms: sum or take medians of many.
import fs from "node:fs";

const TICK_MS = 10; // CLK_TCK = 100 on Linux

/** CPU milliseconds per thread (tid -> name, ms) of a process, from /proc/<pid>/task/<tid>/stat. */
export function threadCpu(pid: number): Map<number, { name: string; ms: number }> {
  const out = new Map<number, { name: string; ms: number }>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // the thread exited
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.set(Number(tid), { name, ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS });
  }
  return out;
}

/** Process CPU milliseconds (utime + stime of all threads, also those that exited) from /proc/<pid>/stat. */
export function processCpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
