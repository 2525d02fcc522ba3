// llama.cpp's llama-bench on a GGUF file: raw single-stream prompt processing (pp) and generation (tg) tokens/s, no
// server in between — the ceiling the servers are measured against.
import { run } from "../../../server/setup/llama-source.ts";

export interface LlamaBenchResult {
  ppTps: number;
  tgTps: number;
  /** Generation of the servers' own run (`same`): as many tokens, after as many already in the context. */
  sameTgTps?: number;
}

interface BenchRow {
  n_prompt: number;
  n_gen: number;
  avg_ts: number;
}

async function rowsOf(binary: string, modelPath: string, args: string[]): Promise<BenchRow[]> {
  const out = await run(binary, ["-m", modelPath, ...args, "-o", "json"], { capture: true });
  return JSON.parse(out) as BenchRow[];
}

/**
 * pp`prompt` and tg`gen` from an empty context; with `same`, also `same.gen` tokens after `same.depth` (`-d`): the
 * servers' single stream generates after its prompt, and a token costs more the longer the context (decision 0026).
 */
export async function llamaBench(
  binary: string,
  modelPath: string,
  o: {
    threads: number;
    prompt: number;
    gen: number;
    reps: number;
    extraArgs?: string[];
    same?: { gen: number; depth: number };
  },
): Promise<LlamaBenchResult> {
  const common = ["-t", String(o.threads), "-r", String(o.reps), ...(o.extraArgs ?? [])];
  const rows = await rowsOf(binary, modelPath, ["-p", String(o.prompt), "-n", String(o.gen), ...common]);
  const pp = rows.find((r) => r.n_prompt > 0 && r.n_gen === 0);
  const tg = rows.find((r) => r.n_gen > 0 && r.n_prompt === 0);
  if (!pp || !tg) throw new Error(`unexpected llama-bench output: ${JSON.stringify(rows).slice(0, 500)}`);
  if (!o.same) return { ppTps: pp.avg_ts, tgTps: tg.avg_ts };
  const deep = ["-p", "0", "-n", String(o.same.gen), "-d", String(o.same.depth), ...common];
  const same = (await rowsOf(binary, modelPath, deep)).find((r) => r.n_gen === o.same!.gen);
  if (!same) throw new Error(`llama-bench ran no tg${o.same.gen} @ d${o.same.depth}`);
  return { ppTps: pp.avg_ts, tgTps: tg.avg_ts, sameTgTps: same.avg_ts };
}
