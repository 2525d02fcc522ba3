// The two servers under comparison, behind one interface: `gantry serve` (Ollama /api/generate, raw prompt) and
// llama.cpp's llama-server (/completion), each started as a real process on its own port with the same GGUF file,
// thread count, parallel sequences and context per sequence, and driven through its HTTP API with identical sampling.
import { spawn, type ChildProcess } from "node:child_process";
import { createModel, freePort, startTestServer } from "../../support/server.ts";
import { postStreamingLines } from "../stream-client.ts";

/** One streamed completion as the client saw it, plus the server's own prompt/generation timings. */
export interface Completion {
  /** Request sent → first streamed text. */
  ttftMs: number;
  promptTokens: number;
  promptMs: number;
  genTokens: number;
  genMs: number;
}

export interface BenchTarget {
  label: string;
  url: string;
  /** The server process (for its GPU memory, nvidia-smi's per-process figure). */
  pid: number | undefined;
  /** `stream`: the request's index among the run's concurrent requests (0 …). */
  complete(prompt: string, nPredict: number, seed: number, stream: number): Promise<Completion>;
  /** The server's decode counters so far (its /metrics). */
  decodeCounters(): Promise<DecodeCounters>;
  stop(): Promise<void>;
}

export interface DecodeCounters {
  /**
   * Decode steps: llama-server's llama_decode calls (up to 2048 tokens each); Gantry's steps (a burst of prompts beyond
   * its 512-token batch is one step of several calls, as it is one llama-server call).
   */
  steps: number;
  /**
   * Gantry's alone (decode-clock.ts): steps started pipelined, seconds with a decode call in flight (those of
   * generation steps' calls, one token per sequence, and their count; of all, on a worker thread, the JS thread's busy
   * seconds), seconds with none while the model had work (what the accelerator waited for) and those in the rows'
   * sampling calls.
   */
  gantry?: {
    pipelined: number;
    decodeSeconds: number;
    generationSeconds: number;
    generationCalls: number;
    jsBusySeconds: number;
    idleSeconds: number;
    samplingSeconds: number;
  };
}

/** Gantry's decode counters in its /metrics text. */
export function gantryCounters(metricsText: string): DecodeCounters {
  const total = (name: string, labels?: string) => counterTotal(metricsText, name, labels);
  return {
    steps: total("gantry_decode_steps_total"),
    gantry: {
      pipelined: total("gantry_decode_steps_pipelined_total"),
      decodeSeconds: total("gantry_decode_seconds_total"),
      generationSeconds: total("gantry_decode_seconds_total", 'call="generation"'),
      generationCalls: total("gantry_decode_calls_total", 'call="generation"'),
      jsBusySeconds: total("gantry_decode_js_busy_seconds_total"),
      idleSeconds: total("gantry_decode_idle_seconds_total"),
      samplingSeconds: total("gantry_decode_idle_seconds_total", 'part="sampling"'),
    },
  };
}

export interface ServeShape {
  threads: number;
  parallel: number;
  /** Context per sequence. */
  contextPerSequence: number;
}

/** Sampling both servers apply (Gantry's defaults, spelled out for llama-server). */
export const SAMPLING = {
  temperature: 0.8,
  top_k: 40,
  top_p: 0.9,
  min_p: 0,
  repeat_penalty: 1.1,
  repeat_last_n: 64,
} as const;

/** Sum of a Prometheus counter's samples in a /metrics text: all label sets, or those with the label `label`. */
export function counterTotal(metricsText: string, name: string, label?: string): number {
  let total = 0;
  for (const line of metricsText.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([^\s{]+)(\{[^}]*\})?\s+([0-9.eE+-]+)/.exec(line);
    if (m?.[1] !== name) continue;
    // Label values here hold no commas (model names, a part).
    if (label === undefined || (m[2] ?? "").slice(1, -1).split(",").includes(label)) total += Number(m[3]);
  }
  return total;
}

export async function startGantry(
  label: string,
  modelPath: string,
  shape: ServeShape,
  env: Record<string, string> = {},
): Promise<BenchTarget> {
  const srv = await startTestServer({
    env: {
      GANTRY_NUM_PARALLEL: String(shape.parallel),
      GANTRY_THREADS: String(shape.threads),
      GANTRY_CONTEXT_LENGTH: String(shape.contextPerSequence),
      GANTRY_KEEP_ALIVE: "-1",
      GANTRY_MAX_QUEUE: "64",
      GANTRY_LOG_LEVEL: "warn",
      ...env,
    },
  });
  try {
    await createModel(srv.url, "bench", modelPath);
  } catch (e) {
    await srv.stop();
    throw e;
  }
  return {
    label,
    url: srv.url,
    pid: srv.proc.pid,
    async complete(prompt, nPredict, seed) {
      const start = performance.now();
      let ttftMs = Number.NaN,
        done: Completion | undefined;
      const body = {
        model: "bench",
        prompt,
        raw: true,
        stream: true,
        keep_alive: -1,
        options: { ...SAMPLING, num_predict: nPredict, seed },
      };
      await postStreamingLines(`${srv.url}/api/generate`, body, (line) => {
        const ev = JSON.parse(line) as {
          response?: string;
          done?: boolean;
          error?: string;
          prompt_eval_count?: number;
          prompt_eval_duration?: number;
          eval_count?: number;
          eval_duration?: number;
        };
        if (ev.error) throw new Error(`${label}: ${ev.error}`);
        if (Number.isNaN(ttftMs) && ev.response) ttftMs = performance.now() - start;
        if (!ev.done) return false;
        done = {
          ttftMs,
          promptTokens: ev.prompt_eval_count ?? 0,
          promptMs: (ev.prompt_eval_duration ?? 0) / 1e6,
          genTokens: ev.eval_count ?? 0,
          genMs: (ev.eval_duration ?? 0) / 1e6,
        };
        return true;
      });
      if (!done) throw new Error(`${label}: stream ended without done`);
      return done;
    },
    async decodeCounters() {
      return gantryCounters(await (await fetch(`${srv.url}/metrics`)).text());
    },
    async stop() {
      await srv.stop();
    },
  };
}

/**
 * How llama-server assigns slots: "lru" (its default: a request takes the least recently used idle slot, so concurrent
 * requests often land on non-adjacent slots, and with one KV stream per slot a step then makes more than one pass over
 * the weights) or "pinned" (request i of a run asks for slot i with `id_slot`: adjacent slots, llama-server's best
 * case).
 */
export type LlamaSlots = "lru" | "pinned";

/** llama-server as a target, and `variant`: the same process with more fields in every request (stopped with it). */
export interface LlamaServerTarget extends BenchTarget {
  variant(label: string, fields: Record<string, unknown>): BenchTarget;
}

export function llamaSlotsFromEnv(env: NodeJS.ProcessEnv = process.env): LlamaSlots {
  const v = env.GANTRY_BENCH_LLAMA_SLOTS ?? "lru";
  if (v === "lru" || v === "pinned") return v;
  throw new Error(`GANTRY_BENCH_LLAMA_SLOTS must be "lru" or "pinned", not ${JSON.stringify(v)}`);
}

export async function startLlamaServer(
  label: string,
  binary: string,
  modelPath: string,
  shape: ServeShape,
  slots: LlamaSlots = "lru",
  /** More arguments (on a GPU: -ngl 999, every layer offloaded, as Gantry's own fit does). */
  extraArgs: string[] = [],
): Promise<LlamaServerTarget> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = "";
  const proc: ChildProcess = spawn(
    binary,
    [
      "-m",
      modelPath,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-t",
      String(shape.threads),
      "-tb",
      String(shape.threads),
      "-np",
      String(shape.parallel),
      "-c",
      String(shape.parallel * shape.contextPerSequence),
      "--metrics",
      ...extraArgs,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  proc.stdout!.on("data", (d: Buffer) => {
    out = (out + d.toString()).slice(-20000);
  });
  proc.stderr!.on("data", (d: Buffer) => {
    out = (out + d.toString()).slice(-20000);
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`llama-server exited with ${proc.exitCode}:\n${out}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`llama-server did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const stop = async () => {
    if (proc.exitCode === null) proc.kill("SIGTERM");
    const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  };
  const target = (name: string, fields: Record<string, unknown>, stopIt: () => Promise<void>): BenchTarget => ({
    label: name,
    url,
    pid: proc.pid,
    async complete(prompt, nPredict, seed, stream) {
      const start = performance.now();
      let ttftMs = Number.NaN,
        done: Completion | undefined;
      const body = {
        prompt,
        stream: true,
        n_predict: nPredict,
        seed,
        cache_prompt: true,
        ...SAMPLING,
        ...(slots === "pinned" ? { id_slot: stream } : {}),
        ...fields,
      };
      await postStreamingLines(`${url}/completion`, body, (line) => {
        if (!line.startsWith("data: ")) return false;
        const ev = JSON.parse(line.slice(6)) as {
          content?: string;
          stop?: boolean;
          timings?: { prompt_n: number; prompt_ms: number; predicted_n: number; predicted_ms: number };
        };
        if (Number.isNaN(ttftMs) && ev.content) ttftMs = performance.now() - start;
        if (!ev.stop || !ev.timings) return false;
        const t = ev.timings;
        done = {
          ttftMs,
          promptTokens: t.prompt_n,
          promptMs: t.prompt_ms,
          genTokens: t.predicted_n,
          genMs: t.predicted_ms,
        };
        return true;
      });
      if (!done) throw new Error(`${name}: stream ended without timings`);
      return done;
    },
    async decodeCounters() {
      return { steps: counterTotal(await (await fetch(`${url}/metrics`)).text(), "llamacpp:n_decode_total") };
    },
    stop: stopIt,
  });
  return {
    ...target(label, {}, stop),
    // Its prompts differ from the primary's, cached in the same process: interleave.ts tags them by target.
    variant: (variantLabel, fields) => target(variantLabel, fields, async () => undefined),
  };
}
