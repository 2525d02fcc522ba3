// Speculative decoding: decode tokens/s of one greedy stream through `gantry serve` with and without drafts, in
// interleaved rounds (A B, B A), and the drafts' acceptance rate; the machine's load average alongside (a shared,
// noisy machine moves every figure: compare the two columns of one row).
import os from "node:os";
import { inTurn, settle } from "./settle.ts";
import { postStreamingLines } from "./stream-client.ts";
import { median } from "./table.ts";
import { createModel, startTestServer } from "../support/server.ts";

export interface SpeculativeCase {
  label: string;
  model: { label: string; path: string };
  /** A raw prompt (no template): what the model continues. */
  prompt: string;
  /** Options that turn drafting on (the "without" side sends none of them). */
  drafting: Record<string, unknown>;
  /** Options both sides send. */
  options?: Record<string, unknown>;
  /** A draft model: the "with" side asks for the model created with PARAMETER draft_model naming it. */
  draftModel?: { label: string; path: string };
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

const REPETITIVE = "The cat sat on the mat. The dog sat on the log. ".repeat(6) + "The cat sat";
const STORY = "Once upon a time, in a small village by the sea,";

/**
 * The rows of `npm run bench serving`: prompt lookup on text that repeats (under Ollama's default repeat penalty 1.1,
 * which steers the model off the repetition, and without it, llama-server's default) and on a story; and SmolLM2-135M
 * drafting for itself (no larger SmolLM2 ships in a registry package: every draft accepted, the draft model's decodes
 * paid in full), paced (the pacer sees a draft model this big never pays) and made to draft (draft_min).
 */
export const speculativeCases = (smollm2: { label: string; path: string }): SpeculativeCase[] => {
  const self = { model: smollm2, prompt: STORY, draftModel: { label: "smollm2-draft", path: smollm2.path } };
  return [
    {
      label: "SmolLM2-135M, repetitive prompt, n-gram drafts (draft_ngram 8), repeat penalty 1.1 (Ollama's default)",
      model: smollm2,
      prompt: REPETITIVE,
      drafting: { draft_ngram: 8 },
    },
    {
      label:
        "SmolLM2-135M, repetitive prompt, n-gram drafts (draft_ngram 8), repeat_penalty 1 (llama-server's default)",
      model: smollm2,
      prompt: REPETITIVE,
      drafting: { draft_ngram: 8 },
      options: { repeat_penalty: 1 },
    },
    {
      label: "SmolLM2-135M, story prompt, n-gram drafts (draft_ngram 8)",
      model: smollm2,
      prompt: STORY,
      drafting: { draft_ngram: 8 },
    },
    { label: "SmolLM2-135M drafting for itself (PARAMETER draft_model), story prompt, paced", ...self, drafting: {} },
    {
      label: "SmolLM2-135M drafting for itself, story prompt, draft_min 6 (drafts whether they pay or not)",
      ...self,
      drafting: { draft_min: 6 },
    },
  ];
};

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
      const drafted = c.draftModel ? `${c.model.label}-drafted-by-${c.draftModel.label}` : c.model.label;
      if (c.draftModel) {
        if (!created.has(c.draftModel.label)) await createModel(srv.url, c.draftModel.label, c.draftModel.path);
        created.add(c.draftModel.label);
        await createModel(srv.url, drafted, c.model.path, { parameters: { draft_model: c.draftModel.label } });
      }
      // Streamed: on a loaded machine a whole answer can take longer than a client's wait for the first byte.
      const generate = async (drafting: Record<string, unknown> | undefined): Promise<Final> => {
        let final: Final | undefined;
        const body = {
          model: drafting ? drafted : c.model.label,
          prompt: c.prompt,
          raw: true,
          stream: true,
          options: { temperature: 0, num_predict: maxTokens, ...c.options, ...(drafting ?? {}) },
        };
        await postStreamingLines(`${srv.url}/api/generate`, body, (text) => {
          const line = JSON.parse(text) as Final & { done?: boolean };
          if (line.error) throw new Error(line.error);
          if (line.done) final = line;
        });
        if (!final) throw new Error("no final object");
        return final;
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
          const f = await generate(undefined);
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
