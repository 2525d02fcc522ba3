// Time to first token of `gantry run <model> "<prompt>"` with the server already up, against the same request sent
// straight to the server's HTTP API from a warm client, side by side in interleaved rounds. The difference is what
// the CLI costs a user: starting Node and the CLI, reaching the server, and printing. Also runnable:
// `node test/bench/cli.ts`.
import { spawn } from "node:child_process";
import { createModel, GANTRY, startTestServer } from "../support/server.ts";
import { smollm2Path } from "../support/models.ts";
import { runHttpLoad } from "./http-load.ts";
import { median } from "./table.ts";

export interface CliRow {
  client: string;
  ttftMs: number;
  totalMs: number;
  rounds: number;
}

const PROMPT = "Name three colours.";

/** ms from spawning `gantry run` to its first byte on stdout, and to its exit. */
function timeRun(url: string, model: string): Promise<{ ttft: number; total: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttft = Number.NaN;
    const proc = spawn(process.execPath, [GANTRY, "run", model, PROMPT], {
      env: { ...process.env, GANTRY_HOST: url, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout.on("data", () => {
      if (Number.isNaN(ttft)) ttft = performance.now() - t0;
    });
    proc.stdout.resume();
    proc.stderr.resume();
    proc.once("error", reject);
    proc.once("exit", (code) =>
      code === 0
        ? resolve({ ttft, total: performance.now() - t0 })
        : reject(new Error(`gantry run exited with ${code}`)),
    );
  });
}

export async function benchCli(opts: { rounds?: number } = {}): Promise<CliRow[]> {
  const rounds = opts.rounds ?? 5;
  const srv = await startTestServer();
  try {
    await createModel(srv.url, "smollm2:135m", await smollm2Path(), { parameters: { num_predict: 32 } });
    await runHttpLoad(srv.url, "smollm2:135m", { concurrency: 1, maxTokens: 8, prompt: PROMPT }); // load the model
    const http: number[] = [],
      httpTotal: number[] = [],
      cli: number[] = [],
      cliTotal: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      const h = await runHttpLoad(srv.url, "smollm2:135m", { concurrency: 1, maxTokens: 32, prompt: PROMPT });
      http.push(h.ttftMs[0]!);
      httpTotal.push(performance.now() - t0);
      const c = await timeRun(srv.url, "smollm2:135m");
      cli.push(c.ttft);
      cliTotal.push(c.total);
    }
    return [
      {
        client: "HTTP /api/generate (warm client, streaming)",
        ttftMs: median(http),
        totalMs: median(httpTotal),
        rounds,
      },
      { client: 'gantry run <model> "<prompt>" (new process)', ttftMs: median(cli), totalMs: median(cliTotal), rounds },
    ];
  } finally {
    await srv.stop();
  }
}

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const rows = await benchCli();
  printTable(
    "CLI: time to first token with the server up (smollm2:135m, 32 tokens)",
    ["client", "TTFT ms (median)", "total ms", "rounds"],
    rows.map((r) => [r.client, r.ttftMs, r.totalMs, r.rounds]),
  );
}
