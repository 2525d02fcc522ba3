// llama-server with llama.cpp's backend sampling (the sampler chain computed in the decode's graph, on the GPU where
// the model is; only the token comes back) beside llama-server as it samples by default (on the host) and Gantry: the
// figure that says whether moving the sampling into the graph reaches the ceiling (docs/decisions/0027).
import { medianRatio, minMedMax, spread, type Table } from "../table.ts";
import type { BatchedBenchRow } from "./batched-bench.ts";

export const LLAMA_BACKEND_SAMPLING = "llama-server, backend sampling";

/** One aggregate run's tokens/s per round: Gantry, llama-server, and llama-server with backend sampling. */
export interface BackendSamplingRun {
  model: string;
  shape: string;
  streams: number;
  gantry: number[];
  llama: number[];
  backend: number[];
}

/** The table of the runs; `ceilings` per model: llama-batched-bench's rows (none: no ceiling column). Pure. */
export function backendSamplingTable(
  runs: BackendSamplingRun[],
  rounds: number,
  ceilings: Map<string, BatchedBenchRow[]>,
): Table {
  const withCeiling = [...ceilings.values()].some((rows) => rows.length > 0);
  return {
    title: `llama-server with backend sampling (\`backend_sampling: true\` in each request: the sampler chain computed in the decode's graph) against llama-server sampling on the host and against Gantry, aggregate generated tok/s, min / median / max of ${rounds} interleaved rounds, ratios of the medians`,
    header: [
      "model",
      "run",
      LLAMA_BACKEND_SAMPLING,
      "llama-server",
      "backend ÷ host sampling",
      "gantry ÷ backend sampling",
      ...(withCeiling ? ["backend sampling ÷ ceiling"] : []),
    ],
    rows: runs.map((r) => {
      const c = ceilings.get(r.model)?.find((x) => x.pl === r.streams);
      return [
        r.model,
        r.shape,
        spread(r.backend),
        spread(r.llama),
        medianRatio(r.backend, r.llama),
        medianRatio(r.gantry, r.backend),
        ...(withCeiling ? [c ? (minMedMax(r.backend).med / c.speedTg).toFixed(2) : "-"] : []),
      ];
    }),
  };
}
