// llama.cpp's llama-batched-bench on a GGUF file: n sequences decoding together in one batch per step, with no server,
// no HTTP and no sampling (the ceiling a server's aggregate tokens/s is measured against on a GPU). S_TG: generated
// tokens per second over the generation phase alone (each sequence's prompt is decoded first and not timed).
import { run } from "../../../server/setup/llama-source.ts";

export interface BatchedBenchRow {
  /** Parallel sequences, prompt and generated tokens per sequence. */
  pl: number;
  pp: number;
  tg: number;
  /** Generation tokens/s, all sequences together (S_TG). */
  speedTg: number;
}

/** Prompt tokens per sequence: a short prompt, as the servers' stream scenarios send. */
export const CEILING_PROMPT_TOKENS = 128;

/** The rows of llama-batched-bench's JSONL output (one per parallel count). Pure. */
export function parseBatchedBench(out: string): BatchedBenchRow[] {
  const rows: BatchedBenchRow[] = [];
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    const r = JSON.parse(line) as { pl: number; pp: number; tg: number; speed_tg: number };
    rows.push({ pl: r.pl, pp: r.pp, tg: r.tg, speedTg: r.speed_tg });
  }
  return rows;
}

export async function batchedBench(
  binary: string,
  modelPath: string,
  o: { threads: number; parallel: number[]; tokens: number; extraArgs?: string[] },
): Promise<BatchedBenchRow[]> {
  const pp = CEILING_PROMPT_TOKENS;
  const ctx = Math.max(...o.parallel) * (pp + o.tokens);
  const out = await run(
    binary,
    [
      "-m",
      modelPath,
      "-c",
      String(ctx),
      "-b",
      "2048",
      "-ub",
      "512",
      "-t",
      String(o.threads),
      "-npp",
      String(pp),
      "-ntg",
      String(o.tokens),
      "-npl",
      o.parallel.join(","),
      "--output-format",
      "jsonl",
      ...(o.extraArgs ?? []),
    ],
    { capture: true },
  );
  const rows = parseBatchedBench(out);
  if (rows.length === 0) throw new Error(`unexpected llama-batched-bench output: ${out.slice(0, 500)}`);
  return rows;
}
