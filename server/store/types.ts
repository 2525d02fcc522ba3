// The store's own types: what a resolved model is (ModelSpec, handed to the engine), what create takes, and what
// /api/tags and /api/show are made from. The HTTP and engine layers build on these; the store imports neither.
import type { GgufSummary } from "../gguf/metadata.ts";
import type { Digest } from "./digest.ts";
import type { ModelParameters, StoredMessage } from "./schemas.ts";

export interface BlobRef {
  digest: Digest;
  path: string;
}

export interface DecodedLayers {
  /** The model GGUF; for a split model, its first part. */
  model: BlobRef;
  /** Every part of a split model, in order (just `model` otherwise). */
  modelParts: BlobRef[];
  projector?: BlobRef;
  adapters: BlobRef[];
  template?: string;
  system?: string;
  parameters: ModelParameters;
  messages: StoredMessage[];
  licenses: string[];
  /** Sum of layer sizes in bytes. */
  size: number;
}

/** The stored options the engine honours (Ollama's `options` names); request options override them. */
export interface ModelOptions {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  seed?: number;
  /** Maximum tokens to generate; -1 or undefined = until the context is full. */
  num_predict?: number;
  stop?: string[];
  repeat_penalty?: number;
  repeat_last_n?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  /** Tokens at the prompt's start that truncation and context shifts keep (Ollama's default 4, after the BOS). */
  num_keep?: number;
  /** Context length per sequence for this model load. */
  num_ctx?: number;
  /** Memory-map the weights (true) or read them into memory (false) for this model load; unset: weights-mapping.ts. */
  use_mmap?: boolean;
  /** Speculative decoding by prompt lookup: at most this many tokens drafted a step; 0 or unset = off. */
  draft_ngram?: number;
  /** Speculative decoding: at least this many tokens drafted a step, paying or not; 0 or unset = as many as pay. */
  draft_min?: number;
}

/** A model as the store resolves it: everything the engine needs to load and prompt it. */
export interface ModelSpec {
  /** Canonical display name, e.g. "smollm2:135m" or "hf.co/org/repo:Q4_K_M". */
  name: string;
  /** Digest of the model (GGUF) layer, "sha256:<hex>". Identifies the loaded weights. */
  digest: string;
  /** Absolute path of the GGUF file. For split GGUFs: the first part. */
  modelPath: string;
  /** Go-template TEMPLATE override (manifest layer). Undefined: use the GGUF's own chat template. */
  template?: string;
  /** Default system prompt (SYSTEM layer). */
  system?: string;
  /** Default options (PARAMETER layer); request options override them. */
  parameters: ModelOptions;
  /** MESSAGE history prepended to every chat. */
  messages: StoredMessage[];
  /** LoRA adapter GGUF paths. */
  adapters: string[];
  /** Multimodal projector GGUF path (vision). */
  projector?: string;
  /** Total bytes of the model's layers (for /api/ps). */
  size: number;
  /** The draft model for speculative decoding (Modelfile PARAMETER draft_model), resolved from the store. */
  draft?: { name: string; digest: string; modelPath: string };
}

export interface ModelDetails {
  parent_model: string;
  format: "gguf";
  family: string;
  families: string[];
  parameter_size: string;
  quantization_level: string;
}

export interface ModelSummary {
  /** Display name, e.g. "smollm2:135m". */
  name: string;
  /** Manifest digest, "sha256:<hex>". */
  digest: string;
  /** Sum of layer sizes in bytes. */
  size: number;
  modifiedAt: Date;
  details: ModelDetails;
}

/** Everything /api/show reports of a model; the HTTP layer formats it (http/show-format.ts). */
export interface ModelDescription {
  displayName: string;
  layers: DecodedLayers;
  summary: GgufSummary;
  details: ModelDetails;
  capabilities: string[];
  /** A vision model's projector GGUF header. */
  projector?: GgufSummary;
  modifiedAt: Date;
}

/** What POST /api/create asks of the store (the request, validated). */
export interface CreateModelInput {
  model: string;
  from?: string | undefined;
  files?: Record<string, string> | undefined;
  adapters?: Record<string, string> | undefined;
  template?: string | undefined;
  system?: string | undefined;
  parameters?: ModelParameters | undefined;
  messages?: StoredMessage[] | undefined;
  license?: string | string[] | undefined;
  quantize?: string | undefined;
  modelfile?: string | undefined;
}

/** One progress line of a create or pull (Ollama's status lines). */
export interface StoreProgress {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}
export type ProgressListener = (p: StoreProgress) => void;

export interface ModelResolver {
  /** Resolves a model reference to what the engine needs. Throws AppError MODEL_NOT_FOUND / MODEL_INVALID_NAME. */
  resolve(ref: string): Promise<ModelSpec>;
  list(): Promise<ModelSummary[]>;
  /** Other names that select the model named `name` (GANTRY_MODEL_ALIASES): /v1/models lists them after it. */
  aliasesOf(name: string): string[];
  /** What a resolved model can do, as /api/show lists it ("completion", "embedding", "vision", …). */
  capabilities(model: ModelSpec): Promise<string[]>;
}
