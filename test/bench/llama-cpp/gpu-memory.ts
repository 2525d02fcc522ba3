// GPU memory per process, as nvidia-smi reports it (empty where there is no nvidia-smi): how much of the GPU each
// server under comparison holds.
import { run } from "../../../server/setup/llama-source.ts";

/** nvidia-smi's compute-apps CSV ("pid, used_memory [MiB]" lines, no header) as pid → MiB. */
export function parseComputeApps(csv: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const line of csv.split("\n")) {
    const m = /^\s*(\d+)\s*,\s*(\d+)/.exec(line);
    if (m) out.set(Number(m[1]), (out.get(Number(m[1])) ?? 0) + Number(m[2]));
  }
  return out;
}

export async function gpuMemoryByPid(): Promise<Map<number, number>> {
  try {
    return parseComputeApps(
      await run("nvidia-smi", ["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], {
        capture: true,
      }),
    );
  } catch {
    return new Map();
  }
}
