// Every PARAMETER Ollama accepts, with its value type. The type decides how the text after the name is read.
import type { ParameterValue } from "./types.ts";

export type ParameterType = "int" | "float" | "bool" | "string";

export const PARAMETER_TYPES = {
  num_ctx: "int",
  num_keep: "int",
  num_predict: "int",
  top_k: "int",
  seed: "int",
  repeat_last_n: "int",
  mirostat: "int",
  num_batch: "int",
  num_gpu: "int",
  main_gpu: "int",
  num_thread: "int",
  draft_ngram: "int",
  draft_min: "int",
  temperature: "float",
  top_p: "float",
  min_p: "float",
  typical_p: "float",
  repeat_penalty: "float",
  presence_penalty: "float",
  frequency_penalty: "float",
  mirostat_eta: "float",
  mirostat_tau: "float",
  tfs_z: "float",
  penalize_newline: "bool",
  use_mmap: "bool",
  numa: "bool",
  stop: "string",
  draft_model: "string",
} as const satisfies Record<string, ParameterType>;

export type ParameterName = keyof typeof PARAMETER_TYPES;

/** Parameters that may appear more than once; they become arrays in a create request. */
export const REPEATABLE_PARAMETERS: ReadonlySet<string> = new Set<ParameterName>(["stop"]);

export function isParameterName(key: string): key is ParameterName {
  return Object.hasOwn(PARAMETER_TYPES, key);
}

export type ParameterResult = { ok: true; value: ParameterValue } | { ok: false; message: string };

const INT_RE = /^[+-]?\d+$/;
const FLOAT_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
// The spellings Go's strconv.ParseBool accepts, which is what Ollama uses.
const TRUE_WORDS = new Set(["1", "t", "T", "true", "TRUE", "True"]);
const FALSE_WORDS = new Set(["0", "f", "F", "false", "FALSE", "False"]);

/** Reads the text of a parameter value as its declared type. */
export function parseParameterValue(key: string, raw: string): ParameterResult {
  if (!isParameterName(key)) return { ok: false, message: `unknown parameter "${key}"` };
  const type = PARAMETER_TYPES[key];
  const invalid = (expected: string): ParameterResult => ({
    ok: false,
    message: `invalid value for ${key}: expected ${expected}, got ${JSON.stringify(raw)}`,
  });
  switch (type) {
    case "int": {
      const n = Number(raw);
      return INT_RE.test(raw) && Number.isSafeInteger(n) ? { ok: true, value: n } : invalid("an integer");
    }
    case "float": {
      const n = Number(raw);
      return FLOAT_RE.test(raw) && Number.isFinite(n) ? { ok: true, value: n } : invalid("a number");
    }
    case "bool":
      if (TRUE_WORDS.has(raw)) return { ok: true, value: true };
      if (FALSE_WORDS.has(raw)) return { ok: true, value: false };
      return invalid("true or false");
    case "string":
      return raw === ""
        ? { ok: false, message: `invalid value for ${key}: must not be empty` }
        : { ok: true, value: raw };
  }
}
