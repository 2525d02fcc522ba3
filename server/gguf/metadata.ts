// GGUF metadata for /api/show and the store's config blob, read from the file header only (no weights loaded).
import fs from "node:fs/promises";
import { AppError } from "../common/errors.ts";
import { readGgufHeader } from "./reader.ts";

export const GGUF_MAGIC = "GGUF";

/** llama.cpp's `llama_ftype` (general.file_type) → the quantization name Ollama reports. */
const FILE_TYPES: Record<number, string> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
  36: "TQ1_0",
  37: "TQ2_0",
  38: "MXFP4",
};

/** Keys whose values are vocabulary-sized arrays: dropped from model_info unless verbose, as Ollama does. */
export const BULKY_KEYS = [
  "tokenizer.ggml.tokens",
  "tokenizer.ggml.scores",
  "tokenizer.ggml.token_type",
  "tokenizer.ggml.merges",
];

export interface GgufSummary {
  architecture: string;
  /** The GGUF key/values under their dotted keys ("llama.context_length": 512, …), plus general.parameter_count. */
  modelInfo: Record<string, unknown>;
  parameterCount: number;
  /** e.g. "135M", "1.7B" (Ollama's format). */
  parameterSize: string;
  /** e.g. "Q4_K_M", "F32"; "unknown" when the file does not say. */
  quantizationLevel: string;
  /** tokenizer.chat_template, when the GGUF has one. */
  chatTemplate?: string;
  /** Models with a pooling type produce embeddings rather than text. */
  isEmbedding: boolean;
  /** The model has a classification head llama.cpp reads under rank pooling (cls.weight or cls.output.weight). */
  isReranker: boolean;
}

/** The tensors of a rank pooling head (llama.cpp's build_pooling, LLAMA_POOLING_TYPE_RANK). */
const RANK_HEAD_TENSORS = new Set(["cls.weight", "cls.output.weight"]);

/** True when the file starts with the GGUF magic. */
export async function hasGgufMagic(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await fs.open(file, "r");
    const buf = Buffer.alloc(4);
    const { bytesRead } = await handle.read(buf, 0, 4, 0);
    return bytesRead === 4 && buf.toString("latin1") === GGUF_MAGIC;
  } catch {
    return false;
  } finally {
    await handle?.close();
  }
}

/** Throws MODEL_INVALID_FILE unless the file is a GGUF. `label` names it in the message. */
export async function assertGguf(file: string, label: string): Promise<void> {
  if (!(await hasGgufMagic(file)))
    throw new AppError("MODEL_INVALID_FILE", `${label} is not a GGUF file (missing "GGUF" magic)`);
}

/** Ollama's format.HumanNumber: 134515008 → "134.52M", 1_000_000_000 → "1B", 1_710_000_000 → "1.7B". */
export function humanParameterCount(n: number): string {
  const fmt = (v: number, unit: string, decimals: number) =>
    Number.isInteger(v) ? `${v}${unit}` : `${v.toFixed(decimals)}${unit}`;
  if (n >= 1e9) return fmt(n / 1e9, "B", 1);
  if (n >= 1e6) return fmt(n / 1e6, "M", 2);
  if (n >= 1e3) return `${Math.round(n / 1e3)}K`;
  return String(n);
}

export const quantizationName = (fileType: unknown): string =>
  typeof fileType === "number" ? (FILE_TYPES[fileType] ?? `type ${fileType}`) : "unknown";

/** Reads a GGUF header. `verbose` keeps the vocabulary arrays in modelInfo; otherwise they are null. */
export async function readGgufSummary(file: string, opts: { verbose?: boolean } = {}): Promise<GgufSummary> {
  const header = await readGgufHeader(file);
  const modelInfo: Record<string, unknown> = Object.fromEntries(header.metadata);
  const architecture =
    typeof modelInfo["general.architecture"] === "string" ? modelInfo["general.architecture"] : "unknown";
  let parameterCount =
    typeof modelInfo["general.parameter_count"] === "number" ? modelInfo["general.parameter_count"] : 0;
  if (!parameterCount) {
    for (const t of header.tensors) parameterCount += t.dims.reduce((a, d) => a * d, 1);
    modelInfo["general.parameter_count"] = parameterCount;
  }
  if (!opts.verbose) for (const key of BULKY_KEYS) if (Object.hasOwn(modelInfo, key)) modelInfo[key] = null;
  const chatTemplate = modelInfo["tokenizer.chat_template"];
  return {
    architecture,
    modelInfo,
    parameterCount,
    parameterSize: humanParameterCount(parameterCount),
    quantizationLevel: quantizationName(modelInfo["general.file_type"]),
    ...(typeof chatTemplate === "string" ? { chatTemplate } : {}),
    isEmbedding: Object.hasOwn(modelInfo, `${architecture}.pooling_type`),
    isReranker: header.tensors.some((t) => RANK_HEAD_TENSORS.has(t.name)),
  };
}

/** Non-verbose summaries cached per blob digest: blobs are immutable, so an entry never goes stale. */
export class GgufSummaryCache {
  private readonly entries = new Map<string, Promise<GgufSummary>>();

  get(digest: string, file: string): Promise<GgufSummary> {
    let entry = this.entries.get(digest);
    if (!entry) {
      entry = readGgufSummary(file);
      entry.catch(() => this.entries.delete(digest));
      this.entries.set(digest, entry);
    }
    return entry;
  }
}
