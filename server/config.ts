// `gantry serve` configuration: one zod schema, parsed once from the environment in main. `--help` prints it.
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { ConfigError, SharedSettings } from "./common/config.ts";
import { HostPortSchema } from "./common/host-port.ts";
import { parseKeepAlive } from "./common/duration.ts";
import { GPU_SETTINGS } from "./engine/gpu.ts";
import { STEP_PIPELINE_SETTINGS } from "./common/step-pipeline-settings.ts";
import { FLASH_ATTENTION, KV_CACHE_TYPES } from "./common/kv-cache-settings.ts";

const intFrom = (min: number) => z.coerce.number().int().min(min);

/**
 * "20mb", "512kb", "1.5gb", "8Gi", "1000" → bytes (binary units, as express's body limit, and Kubernetes' Ki, Mi, Gi);
 * undefined if malformed.
 */
export function parseByteSize(v: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|ki|mi|gi)?\s*$/i.exec(v);
  if (!m) return undefined;
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3, ki: 1024, mi: 1024 ** 2, gi: 1024 ** 3 }[
    (m[2] ?? "b").toLowerCase() as "b"
  ];
  const n = Math.floor(Number(m[1]) * unit);
  return n > 0 ? n : undefined;
}

/** The RAM prompt cache's default share of the memory available at start (auto), and its default ceiling. */
const PROMPT_CACHE_AUTO_SHARE = 0.25,
  PROMPT_CACHE_AUTO_MAX = 8 * 1024 ** 3;

/**
 * GANTRY_PROMPT_CACHE_RAM in bytes: "auto" = a quarter of `availableBytes`, at most 8 GiB (llama-server's --cache-ram
 * default); "0" = none; a size larger than `availableBytes` is refused, with both numbers.
 */
export function resolvePromptCacheRam(value: string, availableBytes: number): number {
  if (value === "auto") return Math.min(PROMPT_CACHE_AUTO_MAX, Math.floor(availableBytes * PROMPT_CACHE_AUTO_SHARE));
  if (value.trim() === "0") return 0;
  const bytes = parseByteSize(value)!;
  if (bytes > availableBytes)
    throw new ConfigError([
      `GANTRY_PROMPT_CACHE_RAM: ${value} (${gib(bytes)}) is more than the memory available now (${gib(availableBytes)}); set a smaller size, auto or 0`,
    ]);
  return bytes;
}

const gib = (bytes: number): string => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

/** "chat=hf.co/org/repo:Q4_K_M,bot=chat" → { chat: "hf.co/…", bot: "chat" }; undefined if malformed. */
export function parseModelAliases(v: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const item of v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([^=\s]+)\s*=\s*([^=\s]+)$/.exec(item);
    if (!m) return undefined;
    out[m[1]!] = m[2]!;
  }
  return out;
}

export const ServerConfigSchema = z.object({
  GANTRY_HOST: HostPortSchema.default("127.0.0.1:11434").describe(
    "Address the server listens on and the CLI connects to (host:port, or http://host:port)",
  ),
  GANTRY_MODELS: z
    .string()
    .default(path.join(os.homedir(), ".gantry", "models"))
    .describe("Model store directory (blobs/ and manifests/)"),
  GANTRY_KEEP_ALIVE: z
    .string()
    .default("5m")
    .refine((v) => {
      try {
        parseKeepAlive(v);
        return true;
      } catch {
        return false;
      }
    }, "must be a duration like 5m, 1h, 30s, seconds, or negative for forever")
    .describe(
      "How long a model stays loaded after its last request (duration or seconds; negative = forever; 0 = unload at once)",
    ),
  GANTRY_SHUTDOWN_TIMEOUT: z
    .string()
    .default("10s")
    .refine((v) => {
      try {
        return parseKeepAlive(v) !== null;
      } catch {
        return false;
      }
    }, "must be a duration like 10s or 1m")
    .describe(
      "On SIGTERM, how long running generations may go on before they are stopped (their clients then get a 503 or an error line)",
    ),
  GANTRY_NUM_PARALLEL: intFrom(1)
    .max(64)
    .default(4)
    .describe("Parallel sequences per loaded model (requests decoded together in one batch)"),
  GANTRY_PROMPT_CACHE_RAM: z
    .string()
    .default("auto")
    .refine(
      (v) => v === "auto" || v.trim() === "0" || parseByteSize(v) !== undefined,
      "must be auto, 0 or a size like 8gb, 512mb",
    )
    .describe(
      "Host memory for KV states of prompts evicted from the sequences (the RAM prompt cache, least recently used out): a later prompt that starts with one has it restored instead of evaluated; auto = a quarter of the memory available at start, at most 8gb; 0 = off; a size larger than the available memory is refused at start",
    ),
  GANTRY_MAX_QUEUE: intFrom(0)
    .default(512)
    .describe("Requests that may wait for a free sequence per model before the server answers 503"),
  GANTRY_ARRIVAL_WAIT_MS: intFrom(0)
    .max(10_000)
    .default(50)
    .describe(
      "Burst admission: how long a request about to be prefilled waits for the requests that arrived with it, so a burst is prefilled in one decode step, and how long a connection just accepted counts as one arriving (milliseconds; 0 = no waiting)",
    ),
  GANTRY_MAX_LOADED_MODELS: intFrom(1)
    .default(3)
    .describe("Models loaded at once; the least recently used idle one is evicted for another"),
  GANTRY_CONTEXT_LENGTH: z.coerce
    .number()
    .int()
    .refine((v) => v === 0 || v >= 64, "must be 0 (by memory) or at least 64")
    .default(0)
    .describe(
      "Default context length per sequence (num_ctx overrides it); 0 = by memory as Ollama's: 4096 under 24 GiB free (VRAM on a GPU; on the CPU, RAM within the process's memory limit), 32768 up to 48 GiB, 262144 above, capped by the model's trained length",
    ),
  GANTRY_KV_CACHE_TYPE: z
    .enum(KV_CACHE_TYPES)
    .default("f16")
    .describe(
      "Element type of the KV cache: f16, or q8_0 / q4_0 (about half / a quarter of its memory, slightly less exact; need flash attention)",
    ),
  GANTRY_FLASH_ATTENTION: z
    .enum(FLASH_ATTENTION)
    .default("auto")
    .describe("Flash attention: auto = where the backend runs it for the model (llama-server's default), on, off"),
  GANTRY_THREADS: intFrom(0).default(0).describe("CPU threads for inference (0 = number of physical cores)"),
  GANTRY_ENGINE_BUILD: z
    .enum(["auto", "source", "prebuilt"])
    .default("auto")
    .describe(
      "Inference binary: auto = the patched node-llama-cpp build made by setup (persistent threadpool) when present, else the prebuilt one; source = the patched build with llama.cpp compiled from source too (setup makes it when set); prebuilt = always the package's prebuilt binary",
    ),
  GANTRY_CACHE: z
    .string()
    .default(path.join(os.homedir(), ".cache", "gantry"))
    .describe("Cache of everything setup downloads or builds (the patched engine, the default model)"),
  GANTRY_ENGINE_CPU: z
    .enum(["native", "portable"])
    .default("native")
    .describe(
      "CPU target of a GANTRY_ENGINE_BUILD=source build: native = this machine's instruction set; portable = any x86-64/arm64 CPU (images)",
    ),
  GANTRY_THREADPOOL_POLL: intFrom(0)
    .max(100)
    .default(50)
    .describe(
      "Busy-wait level of the persistent threadpool's idle threads between decode steps (ggml poll, 0-100, llama-server's default 50; 0 = sleep at once, for cores shared with other work)",
    ),
  GANTRY_STEP_PIPELINE: z
    .enum(STEP_PIPELINE_SETTINGS)
    .default("auto")
    .describe(
      "Pipelined decode steps: each stream's next token decodes on a worker thread while the server streams the last one (auto = on where all of a model's layers are on a GPU; where the CPU computes, on every core, generation steps decode on the request thread instead); on = always (to measure it on a CPU); off = never",
    ),
  GANTRY_GPU: z
    .enum(GPU_SETTINGS)
    .default("auto")
    .describe(
      "GPU backend: auto = the GPU node-llama-cpp finds (CUDA, Vulkan or Metal), else the CPU; cuda, vulkan, metal = that backend; off = the CPU only (the patched CPU build)",
    ),
  GANTRY_ONLY_MODELS: z
    .string()
    .default("")
    .describe(
      "Models this server lists and serves, comma-separated names (or .gguf paths); every other model in the store is hidden and answers 404 (the operator sets it to the app's model, so apps sharing a model volume see only their own); empty = all",
    ),
  GANTRY_MODEL_ALIASES: z
    .string()
    .default("")
    .refine((v) => parseModelAliases(v) !== undefined, "must be alias=model pairs, comma-separated")
    .describe(
      "Other names that select a model, comma-separated alias=model pairs (the operator sets <app>=<the app's model>, so a request may name the app); /v1/models lists them after the model",
    ),
  GANTRY_ORIGINS: z
    .string()
    .default("")
    .describe("Extra allowed CORS origins, comma-separated (localhost origins are always allowed)"),
  GANTRY_BODY_LIMIT: z.string().default("32mb").describe("Largest accepted request body"),
  GANTRY_MAX_IMAGE_SIZE: z
    .string()
    .default("20mb")
    .refine((v) => parseByteSize(v) !== undefined, "must be a size like 20mb, 512kb or a number of bytes")
    .describe("Largest image accepted in a request (encoded; base64 data, data URL or fetched URL)"),
  GANTRY_ALLOW_REMOTE_IMAGES: z
    .enum(["true", "false"])
    .default("true")
    .describe(
      "Fetch http(s) image URLs of OpenAI image_url parts (false = only data URLs; the operator's pods set false)",
    ),
  GANTRY_REMOTE_IMAGE_TIMEOUT: z
    .string()
    .default("10s")
    .refine((v) => {
      try {
        return (parseKeepAlive(v) ?? 0) > 0;
      } catch {
        return false;
      }
    }, "must be a duration like 10s")
    .describe("Longest a remote image fetch may take"),
  GANTRY_LOG_LEVEL: SharedSettings.GANTRY_LOG_LEVEL,
  GANTRY_HUB_URL: z
    .string()
    .default("https://huggingface.co")
    .describe("Hugging Face hub base URL for hf.co/<org>/<repo> pulls"),
  HF_TOKEN: z.string().optional().describe("Hugging Face token sent with hub requests (private repos)"),
});

export type ServerConfig = z.infer<typeof ServerConfigSchema>;

/** Ollama's flag values (envconfig.BoolWithDefault): set and true turns it on, set and false off; unset is auto. */
const ollamaBool = (v: string): string =>
  ["1", "true", "t", "yes", "on"].includes(v.trim().toLowerCase()) ? "on" : "off";

/**
 * Ollama's environment variables that mean what a Gantry setting means, and how their values translate: a server set
 * up for Ollama runs the same. The Gantry variable wins when both are set.
 */
export const OLLAMA_ENV_ALIASES: ReadonlyArray<{
  ollama: string;
  gantry: keyof ServerConfig;
  value?: (v: string) => string;
}> = [
  { ollama: "OLLAMA_CONTEXT_LENGTH", gantry: "GANTRY_CONTEXT_LENGTH" },
  { ollama: "OLLAMA_KV_CACHE_TYPE", gantry: "GANTRY_KV_CACHE_TYPE", value: (v) => v.trim().toLowerCase() },
  { ollama: "OLLAMA_FLASH_ATTENTION", gantry: "GANTRY_FLASH_ATTENTION", value: ollamaBool },
  { ollama: "OLLAMA_MAX_QUEUE", gantry: "GANTRY_MAX_QUEUE" },
  { ollama: "OLLAMA_NUM_PARALLEL", gantry: "GANTRY_NUM_PARALLEL" },
  { ollama: "OLLAMA_KEEP_ALIVE", gantry: "GANTRY_KEEP_ALIVE" },
  { ollama: "OLLAMA_MAX_LOADED_MODELS", gantry: "GANTRY_MAX_LOADED_MODELS" },
  { ollama: "OLLAMA_ORIGINS", gantry: "GANTRY_ORIGINS" },
];

/** The environment with each unset Gantry setting taken from its Ollama alias, when that one is set. */
export function withOllamaAliases(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { ...env };
  for (const a of OLLAMA_ENV_ALIASES) {
    const v = env[a.ollama];
    if ((out[a.gantry] === undefined || out[a.gantry] === "") && v !== undefined && v !== "")
      out[a.gantry] = a.value ? a.value(v) : v;
  }
  return out;
}
