// Wire schemas of the model-store endpoints (/api/create, /api/show, /api/delete, /api/copy, /api/tags). Request
// types are inferred from these; response schemas document (and tests check) what the routes send. Request objects are
// wire objects (wire.ts): a null on any field means the field is absent.
import { z } from "zod";
import { wire } from "./wire.ts";

/** Older Ollama clients send `name` where newer ones send `model`. */
const withModelAlias = (body: unknown): unknown => {
  if (body && typeof body === "object" && !Array.isArray(body) && !("model" in body) && "name" in body) {
    return { ...body, model: (body as { name: unknown }).name };
  }
  return body;
};

const stopList = z.union([z.string(), z.array(z.string())]).transform((v) => (typeof v === "string" ? [v] : v));

/** Model default options (Modelfile PARAMETER / create `parameters`): Ollama's option names; `stop` always a list. */
export const ModelParametersSchema = wire(
  z
    .object({
      num_ctx: z.number().int().positive(),
      num_predict: z.number().int(),
      num_keep: z.number().int(),
      num_batch: z.number().int().positive(),
      num_gpu: z.number().int(),
      main_gpu: z.number().int(),
      num_thread: z.number().int().nonnegative(),
      seed: z.number().int(),
      temperature: z.number().nonnegative(),
      top_k: z.number().int(),
      top_p: z.number(),
      min_p: z.number(),
      typical_p: z.number(),
      repeat_last_n: z.number().int(),
      repeat_penalty: z.number(),
      presence_penalty: z.number(),
      frequency_penalty: z.number(),
      penalize_newline: z.boolean(),
      mirostat: z.number().int(),
      mirostat_eta: z.number(),
      mirostat_tau: z.number(),
      tfs_z: z.number(),
      use_mmap: z.boolean(),
      numa: z.boolean(),
      stop: stopList,
    })
    .partial()
    .strict(),
);
export type ModelParameters = z.infer<typeof ModelParametersSchema>;

export const StoredMessageSchema = wire(
  z.object({
    role: z.enum(["system", "user", "assistant", "tool"]),
    content: z.string(),
  }),
);
export type StoredMessage = z.infer<typeof StoredMessageSchema>;

/** filename → blob digest (uploaded before with POST /api/blobs/:digest). */
const FileMapSchema = z.record(z.string().min(1), z.string());

export const CreateRequestSchema = z.preprocess(
  withModelAlias,
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
  withModelAlias,
  wire(
    z.object({
      model: z.string().min(1, "model name is required"),
      verbose: z.boolean().optional(),
    }),
  ),
);

export const DeleteRequestSchema = z.preprocess(
  withModelAlias,
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
