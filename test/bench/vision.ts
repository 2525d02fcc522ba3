// `npm run bench vision`: image requests on the generated vision pair (test/support/gguf/vision.ts), Gantry against
// llama.cpp's llama-server with --mmproj on the same two files (built from the llama.cpp release node-llama-cpp ships,
// test/bench/llama-cpp/tools.ts), same threads, parallel sequences and context per sequence, side by side in
// interleaved rounds. Each request is one user turn with its own image (never in any cache) through the OpenAI-style
// /v1/chat/completions of both servers, greedy, a fixed number of tokens. Latency is split into the image encode (the
// servers' own accounting: Gantry's gantry_image_encode_seconds, llama-server's "image processed in" log line), the
// prompt (encode + decoding the image's embeddings and the text) and generation (each server's own timings).
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { llamaTools } from "./llama-cpp/tools.ts";
import { processCpuMs } from "./process-cpu.ts";
import { encodePng, patternImage } from "../support/images.ts";
import { visionPairPaths } from "../support/models.ts";
import { freePort, startTestServer } from "../support/server.ts";
import { median } from "./table.ts";

const THREADS = 2;
const PARALLEL = 4;
const CONTEXT = 512;
const N_PREDICT = 32;

interface Sample {
  latencyMs: number;
  encodeMs: number;
  promptMs: number;
  genMs: number;
  genTokens: number;
  /** The server process's CPU time per request (utime + stime over the request's round, divided by its requests). */
  cpuMs: number;
}

export interface VisionTarget {
  label: string;
  /** One request with this image; `encodeMs` is filled by `encodes` afterwards where the server reports it per run. */
  ask(image: Buffer): Promise<Omit<Sample, "encodeMs" | "cpuMs">>;
  /** Image encode milliseconds the server reported since the last call (one per image). */
  encodes(): Promise<number[]>;
  stop(): Promise<void>;
  /** The server's process id (for CPU accounting). */
  pid: number;
}

const body = (model: string, image: Buffer) => ({
  model,
  temperature: 0,
  max_tokens: N_PREDICT,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "Describe this picture." },
        { type: "image_url", image_url: { url: `data:image/png;base64,${image.toString("base64")}` } },
      ],
    },
  ],
});

async function post(url: string, payload: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Record<string, unknown>;
}

export async function startGantryVision(env: Record<string, string> = {}): Promise<VisionTarget> {
  const pair = await visionPairPaths();
  const srv = await startTestServer({
    env: {
      GANTRY_NUM_PARALLEL: String(PARALLEL),
      GANTRY_THREADS: String(THREADS),
      GANTRY_CONTEXT_LENGTH: String(CONTEXT),
      GANTRY_KEEP_ALIVE: "-1",
      GANTRY_LOG_LEVEL: "warn",
      ...env,
    },
  });
  const files: Record<string, string> = {};
  for (const [name, file] of [
    ["model.gguf", pair.model],
    ["mmproj.gguf", pair.mmproj],
  ] as const) {
    const bytes = fs.readFileSync(file);
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    await fetch(`${srv.url}/api/blobs/${digest}`, { method: "POST", body: bytes });
    files[name] = digest;
  }
  await post(`${srv.url}/api/create`, { model: "vis", files, stream: false });
  let seen = { count: 0, sum: 0 };
  const histogram = async () => {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    const read = (what: string) =>
      Number(new RegExp(`^gantry_image_encode_seconds_${what}\\{[^}]*\\} ([0-9.eE+-]+)`, "m").exec(text)?.[1] ?? 0);
    return { count: read("count"), sum: read("sum") };
  };
  return {
    label: "gantry",
    pid: srv.proc.pid!,
    async ask(image) {
      // /api/chat: the same turn, with Ollama's own prompt and generation durations.
      const start = performance.now();
      const r = await post(`${srv.url}/api/chat`, {
        model: "vis",
        stream: false,
        keep_alive: -1,
        options: { temperature: 0, num_predict: N_PREDICT },
        messages: body("vis", image).messages.map((m) => ({
          role: m.role,
          content: "Describe this picture.",
          images: [image.toString("base64")],
        })),
      });
      return {
        latencyMs: performance.now() - start,
        promptMs: (r.prompt_eval_duration as number) / 1e6,
        genMs: (r.eval_duration as number) / 1e6,
        genTokens: r.eval_count as number,
      };
    },
    async encodes() {
      const now = await histogram();
      const n = now.count - seen.count,
        ms = ((now.sum - seen.sum) * 1000) / Math.max(1, n);
      seen = now;
      return new Array<number>(n).fill(ms);
    },
    stop: () => srv.stop().then(() => undefined),
  };
}

export async function startLlamaServerVision(binary: string): Promise<VisionTarget> {
  const pair = await visionPairPaths();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = "";
  let read = 0;
  const proc: ChildProcess = spawn(
    binary,
    [
      ...["-m", pair.model, "--mmproj", pair.mmproj, "--host", "127.0.0.1", "--port", String(port)],
      ...["-t", String(THREADS), "-tb", String(THREADS), "-np", String(PARALLEL), "-c", String(PARALLEL * CONTEXT)],
      "--no-warmup",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  proc.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const deadline = Date.now() + 120_000;
  while (
    (await fetch(`${url}/health`).then(
      (r) => r.status,
      () => 0,
    )) !== 200
  ) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`llama-server did not start:\n${log.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    label: "llama-server --mmproj",
    pid: proc.pid!,
    async ask(image) {
      const start = performance.now();
      const r = await post(`${url}/v1/chat/completions`, { ...body("vis", image), cache_prompt: false });
      const t = r.timings as { prompt_ms: number; predicted_ms: number; predicted_n: number };
      return {
        latencyMs: performance.now() - start,
        promptMs: t.prompt_ms,
        genMs: t.predicted_ms,
        genTokens: t.predicted_n,
      };
    },
    async encodes() {
      // mtmd's helper logs "image slice encoded in <n> ms" for every image it encodes.
      const fresh = log.slice(read);
      read = log.length;
      return [...fresh.matchAll(/slice encoded in (\d+) ms/g)].map((m) => Number(m[1]));
    },
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await exited;
    },
  };
}

export interface VisionRow {
  server: string;
  concurrency: number;
  samples: Sample[];
}

/** Interleaved rounds: each round, each server answers `concurrency` requests at once, every one with a new image. */
export async function benchVision(rounds: number): Promise<VisionRow[]> {
  const tools = await llamaTools(["llama-server"]);
  const targets = [await startGantryVision(), await startLlamaServerVision(tools.server)];
  const rows: VisionRow[] = [];
  let seed = 1000;
  try {
    for (const t of targets) {
      await t.ask(encodePng(patternImage(96, 96, seed++))); // warm-up
      await t.encodes();
    }
    for (const concurrency of [1, 4]) {
      const byTarget = new Map(targets.map((t) => [t, [] as Sample[]]));
      for (let round = 0; round < rounds; round++) {
        for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
          const images = Array.from({ length: concurrency }, () => encodePng(patternImage(96, 96, seed++)));
          const cpu = processCpuMs(t.pid);
          const answers = await Promise.all(images.map((img) => t.ask(img)));
          const cpuMs = (processCpuMs(t.pid) - cpu) / concurrency;
          const encodes = await t.encodes();
          answers.forEach((a, i) => byTarget.get(t)!.push({ ...a, encodeMs: encodes[i] ?? Number.NaN, cpuMs }));
          process.stderr.write(`vision ${t.label} c${concurrency} round ${round + 1}/${rounds}\n`);
        }
      }
      for (const t of targets) rows.push({ server: t.label, concurrency, samples: byTarget.get(t)! });
    }
  } finally {
    for (const t of targets) await t.stop();
  }
  return rows;
}

/** The table's rows: medians per server and concurrency. */
export function visionTableRows(rows: VisionRow[]): string[][] {
  const med = (xs: number[]) => {
    const ok = xs.filter((x) => Number.isFinite(x));
    return ok.length ? median(ok).toFixed(1) : "-";
  };
  return rows.map((r) => [
    r.server,
    String(r.concurrency),
    String(r.samples.length),
    med(r.samples.map((s) => s.latencyMs)),
    med(r.samples.map((s) => s.encodeMs)),
    med(r.samples.map((s) => s.promptMs)),
    med(r.samples.map((s) => s.genMs)),
    med(r.samples.map((s) => (s.genTokens * 1000) / s.genMs)),
    med(r.samples.map((s) => s.cpuMs)),
  ]);
}

export const VISION_HEADER = [
  "server",
  "concurrency",
  "requests",
  "latency ms",
  "image encode ms",
  "prompt ms (encode + prefill)",
  "generation ms",
  "gen tok/s per stream",
  "server CPU ms/request",
];
