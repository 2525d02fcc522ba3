// The store contract the serving routes rely on. Implemented by server/store/model-store.ts.
import type { ModelSpec } from "../engine/types.ts";

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

export interface ModelResolver {
  /** Resolves a model reference to what the engine needs. Throws AppError MODEL_NOT_FOUND / MODEL_INVALID_NAME. */
  resolve(ref: string): Promise<ModelSpec>;
  list(): Promise<ModelSummary[]>;
  /** What a resolved model can do, as /api/show lists it ("completion", "embedding", "vision", …). */
  capabilities(model: ModelSpec): Promise<string[]>;
}
