// Wire schemas of the model-store endpoints (/api/create, /api/show, /api/delete, /api/copy, /api/tags). Request
// types are inferred from these; response schemas document (and tests check) what the routes send. Request objects are
// wire objects (wire.ts): a null on any field means the field is absent.
import { z } from "zod";
import {
  StoredMessageShape,
  StoredParametersSchema,
  type ModelParameters,
  type StoredMessage,
} from "../store/schemas.ts";
import { modelOrName, wire } from "./wire.ts";

/** Model default options (Modelfile PARAMETER / create `parameters`), as the store keeps them. */
export const ModelParametersSchema = wire(StoredParametersSchema);
export type { ModelParameters, StoredMessage };

export const StoredMessageSchema = wire(StoredMessageShape);

/** filename → blob digest (uploaded before with POST /api/blobs/:digest). */
const FileMapSchema = z.record(z.string().min(1), z.string());

export const CreateRequestSchema = z.preprocess(
  modelOrName,
  wire(
    z.object({
      model: z.string().min(1, "model name is required"),
      from: z.string().min(1).optional(),
      files: FileMapSchema.optional(),
      adapters: FileMapSchema.optional(),
      template: z.string().optional(),
      system: z.string().optional(),
      parameters: ModelParametersSchema.optional(),
      messages: z.array(StoredMessageSchema).optional(),
      license: z.union([z.string(), z.array(z.string())]).optional(),
      quantize: z.string().optional(),
      modelfile: z.string().optional(),
      stream: z.boolean().optional(),
    }),
  ),
);
export type CreateRequest = z.infer<typeof CreateRequestSchema>;

export const ShowRequestSchema = z.preprocess(
  modelOrName,
  wire(
    z.object({
      model: z.string().min(1, "model name is required"),
      verbose: z.boolean().optional(),
    }),
  ),
);

export const DeleteRequestSchema = z.preprocess(
  modelOrName,
  wire(
    z.object({
      model: z.string().min(1, "model name is required"),
    }),
  ),
);

export const CopyRequestSchema = wire(
  z.object({
    source: z.string().min(1, "source model name is required"),
    destination: z.string().min(1, "destination model name is required"),
  }),
);

export const ProgressSchema = z.object({
  status: z.string(),
  digest: z.string().optional(),
  total: z.number().optional(),
  completed: z.number().optional(),
});
export type Progress = z.infer<typeof ProgressSchema>;

export const ModelDetailsSchema = z.object({
  parent_model: z.string(),
  format: z.literal("gguf"),
  family: z.string(),
  families: z.array(z.string()),
  parameter_size: z.string(),
  quantization_level: z.string(),
});

export const TagsResponseSchema = z.object({
  models: z.array(
    z.object({
      name: z.string(),
      model: z.string(),
      modified_at: z.string(),
      size: z.number(),
      /** Bare hex, as Ollama reports it. */
      digest: z.string(),
      details: ModelDetailsSchema,
    }),
  ),
});
export type TagsResponse = z.infer<typeof TagsResponseSchema>;

export const ShowResponseSchema = z.object({
  license: z.string().optional(),
  modelfile: z.string(),
  parameters: z.string().optional(),
  template: z.string().optional(),
  system: z.string().optional(),
  details: ModelDetailsSchema,
  model_info: z.record(z.string(), z.unknown()),
  capabilities: z.array(z.string()),
  /** A vision model's projector: its GGUF metadata (clip.* keys, general.architecture "clip"), as Ollama shows it. */
  projector_info: z.record(z.string(), z.unknown()).optional(),
  modified_at: z.string(),
  messages: z.array(StoredMessageSchema).optional(),
});
export type ShowResponse = z.infer<typeof ShowResponseSchema>;
