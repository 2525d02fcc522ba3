// llama.cpp's llama-bench on a GGUF file: raw single-stream prompt processing (pp) and generation (tg) tokens/s, no
// server in between — the ceiling the servers are measured against.
import { run } from "../../../server/setup/llama-source.ts";

export interface LlamaBenchResult {
  ppTps: number;
  tgTps: number;
}

export async function llamaBench(
  binary: string,
  modelPath: string,
  o: { threads: number; prompt: number; gen: number; reps: number; extraArgs?: string[] },
): Promise<LlamaBenchResult> {
  const out = await run(
    binary,
    [
      "-m",
      modelPath,
      "-t",
      String(o.threads),
      "-p",
      String(o.prompt),
      "-n",
      String(o.gen),
      "-r",
      String(o.reps),
      "-o",
      "json",
      ...(o.extraArgs ?? []),
    ],
    { capture: true },
  );
  const rows = JSON.parse(out) as Array<{ n_prompt: number; n_gen: number; avg_ts: number }>;
  const pp = rows.find((r) => r.n_prompt > 0 && r.n_gen === 0);
  const tg = rows.find((r) => r.n_gen > 0 && r.n_prompt === 0);
  if (!pp || !tg) throw new Error(`unexpected llama-bench output: ${out.slice(0, 500)}`);
  return { ppTps: pp.avg_ts, tgTps: tg.avg_ts };
}
