// Speculative decoding: decode tokens/s of one greedy stream through `gantry serve` with and without drafts, in
// interleaved rounds (A B, B A), and the drafts' acceptance rate; the machine's load average alongside (a shared,
// noisy machine moves every figure: compare the two columns of one row).
import os from "node:os";
import { inTurn, settle } from "./settle.ts";
import { median } from "./table.ts";
import { createModel, startTestServer } from "../support/server.ts";

export interface SpeculativeCase {
  label: string;
  model: { label: string; path: string };
  /** A raw prompt (no template): what the model continues. */
  prompt: string;
  /** Options that turn drafting on (the "without" side sends none of them). */
  drafting: Record<string, unknown>;
}

export interface SpeculativeRow {
  label: string;
  withoutTps: number;
  withTps: number;
  /** Median over rounds of with ÷ without measured in the same round. */
  ratio: number;
  acceptanceRate: number;
  load: string;
}

interface Final {
  eval_count: number;
  eval_duration: number;
  draft_acceptance_rate?: number;
  error?: string;
}

export async function benchSpeculative(
  cases: SpeculativeCase[],
  opts: { rounds?: number; maxTokens?: number } = {},
): Promise<SpeculativeRow[]> {
  const rounds = opts.rounds ?? 5;
  const maxTokens = opts.maxTokens ?? 128;
  const srv = await startTestServer({
    env: { GANTRY_NUM_PARALLEL: "1", GANTRY_CONTEXT_LENGTH: "2048", GANTRY_KEEP_ALIVE: "-1", GANTRY_LOG_LEVEL: "warn" },
  });
  const rows: SpeculativeRow[] = [];
  try {
    const created = new Set<string>();
    for (const c of cases) {
      if (!created.has(c.model.label)) await createModel(srv.url, c.model.label, c.model.path);
      created.add(c.model.label);
      const generate = async (drafting: Record<string, unknown>): Promise<Final> => {
        const r = await fetch(`${srv.url}/api/generate`, {
          method: "POST",
          body: JSON.stringify({
            model: c.model.label,
            prompt: c.prompt,
            raw: true,
            stream: false,
            options: { temperature: 0, num_predict: maxTokens, ...drafting },
          }),
        });
        const body = (await r.json()) as Final;
        if (body.error) throw new Error(body.error);
        return body;
      };
      await generate(c.drafting);
      const without: number[] = [],
        withDrafts: number[] = [],
        ratios: number[] = [],
        rates: number[] = [];
      const loads = [os.loadavg()[0]!];
      for (let r = 0; r < rounds; r++) {
        const a = async () => {
          await settle();
          const f = await generate({});
          without.push(f.eval_count / (f.eval_duration / 1e9));
        };
        const b = async () => {
          await settle();
          const f = await generate(c.drafting);
          withDrafts.push(f.eval_count / (f.eval_duration / 1e9));
          rates.push(f.draft_acceptance_rate ?? 0);
        };
        await inTurn(r, a, b);
        ratios.push(withDrafts.at(-1)! / without.at(-1)!);
      }
      loads.push(os.loadavg()[0]!);
      const row = {
        label: c.label,
        withoutTps: median(without),
        withTps: median(withDrafts),
        ratio: median(ratios),
        acceptanceRate: median(rates),
        load: loads.map((l) => l.toFixed(1)).join(" → "),
      };
      rows.push(row);
      process.stderr.write(
        `speculative ${c.label}: ${row.withoutTps.toFixed(1)} → ${row.withTps.toFixed(1)} tok/s (load ${row.load})\n`,
      );
    }
  } finally {
    await srv.stop();
  }
  return rows;
}
