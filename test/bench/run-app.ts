// `gantry run app.ts::chat` (the installed package's bin) from the command to its first token and its first answer
// (8 tokens, streamed, through the app's URL {url}/local/chat/v1), against `gantry serve` with the same server settings
// started the same way and asked directly on /v1 (no app file, no gateway; the model loads on that first request):
// what the app path costs over a bare server. SmolLM2-135M from a local hub, in a model store pulled once before the
// interleaved rounds (so both start from a cached model). No cluster. Also runnable: `node test/bench/run-app.ts`.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { ModelAppSpecSchema } from "../../operator/api/v1alpha1/modelapp.ts";
import { localServerEnv } from "../../server/platform/local-app.ts";
import { startHubServer } from "../support/hub-server.ts";
import { installedGantry } from "../support/installed-gantry.ts";
import { smollm2Path } from "../support/models.ts";
import { freePort } from "../support/server.ts";
import { median } from "./table.ts";

const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const SPEC = { model: MODEL, server: { contextLength: 1024 } };

export interface RunAppRow {
  path: string;
  listeningSeconds: number;
  firstTokenSeconds: number;
  answerSeconds: number;
  rounds: number;
}

interface Started {
  proc: ChildProcess;
  exited: Promise<unknown>;
}

function start(
  bin: string,
  args: string[],
  cwd: string,
  env: Record<string, string | undefined>,
): Started & {
  out: () => string;
} {
  const proc = spawn(bin, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", () => undefined);
  return { proc, exited: new Promise((r) => proc.once("exit", r)), out: () => out };
}

async function until<T>(what: string, p: Started, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (p.proc.exitCode !== null) throw new Error(`${what}: the process exited ${p.proc.exitCode}`);
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: timed out`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Streams one chat answer of 8 tokens; seconds since t0 of its first content token and of its end. */
async function firstAnswer(baseURL: string, t0: number): Promise<{ token: number; answer: number }> {
  const stream = await new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 }).chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Hello!" }],
    max_tokens: 8,
    stream: true,
  });
  let token = Number.NaN;
  for await (const chunk of stream)
    if (Number.isNaN(token) && chunk.choices[0]?.delta.content) token = (performance.now() - t0) / 1000;
  return { token, answer: (performance.now() - t0) / 1000 };
}

async function stop(p: Started, signal: NodeJS.Signals): Promise<void> {
  p.proc.kill(signal);
  await p.exited;
}

export async function benchRunApp(opts: { rounds?: number } = {}): Promise<RunAppRow[]> {
  const rounds = opts.rounds ?? 3;
  const [gantry, hub] = await Promise.all([installedGantry(), startHubServer()]);
  await hub.register({
    org: "HuggingFaceTB",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-run-app-"));
  const env = {
    ...process.env,
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
    GANTRY_HUB_URL: `http://127.0.0.1:${hub.port}`,
    GANTRY_MODELS: path.join(work, "models"),
  };
  fs.writeFileSync(
    path.join(work, "app.ts"),
    `import { defineApp } from "gantry";\nexport const chat = defineApp(${JSON.stringify(SPEC)});\n`,
  );
  // The bare server gets the app's server settings, as gantry run gives them to its own server.
  const serveEnv = { ...localServerEnv(ModelAppSpecSchema.parse(SPEC), env) };

  const runApp = async () => {
    const t0 = performance.now();
    const p = start(gantry.bin, ["run", "app.ts::chat", "--port", "0", "-o", "json"], work, env);
    const url = await until("gantry run", p, async () => {
      const line = p.out().split("\n")[0];
      return p.out().includes("\n") ? (JSON.parse(line!) as { url: string }).url : undefined;
    });
    const listening = (performance.now() - t0) / 1000;
    const a = await firstAnswer(`${url}/v1`, t0);
    await stop(p, "SIGINT");
    return { listening, ...a };
  };
  const serve = async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const t0 = performance.now();
    const p = start(gantry.bin, ["serve"], work, { ...serveEnv, GANTRY_HOST: `127.0.0.1:${port}` });
    await until("gantry serve", p, () =>
      fetch(`${base}/health`).then(
        (r) => (r.status === 200 ? true : undefined),
        () => undefined,
      ),
    );
    const listening = (performance.now() - t0) / 1000;
    const a = await firstAnswer(`${base}/v1`, t0);
    await stop(p, "SIGTERM");
    return { listening, ...a };
  };

  try {
    await runApp(); // pulls the model into the store: every measured round starts from it cached
    const times = { run: [] as Awaited<ReturnType<typeof runApp>>[], serve: [] as Awaited<ReturnType<typeof serve>>[] };
    for (let i = 0; i < rounds; i++) {
      times.run.push(await runApp());
      times.serve.push(await serve());
    }
    const row = (label: string, t: { listening: number; token: number; answer: number }[]): RunAppRow => ({
      path: label,
      listeningSeconds: median(t.map((x) => x.listening)),
      firstTokenSeconds: median(t.map((x) => x.token)),
      answerSeconds: median(t.map((x) => x.answer)),
      rounds,
    });
    return [
      row("gantry run app.ts::chat (installed bin; via its gateway, {url}/local/chat/v1)", times.run),
      row("gantry serve + first request on /v1 (same settings; model loads on it)", times.serve),
    ];
  } finally {
    await hub.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export const runAppTitle = (): string =>
  `Platform: gantry run of an app with a cached model (SmolLM2-135M), from the command to its first streamed token and to its whole 8-token answer, beside a bare gantry serve started the same way; "ready" is when the app's URL is printed (the model loaded) or /health answers 200 (no model loaded yet); median of interleaved rounds (load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs)`;
export const RUN_APP_HEADER = ["path", "to ready s", "to first token s", "to answer s", "rounds"];

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const rows = await benchRunApp({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3) });
  printTable(
    runAppTitle(),
    RUN_APP_HEADER,
    rows.map((r) => [r.path, r.listeningSeconds, r.firstTokenSeconds, r.answerSeconds, String(r.rounds)]),
  );
}
