// What the store keeps in a model's text layers: default options (params) and MESSAGE history. The HTTP API accepts the
// same shapes on /api/create (api/store-schemas.ts wraps these with the wire rule).
import { z } from "zod";

const stopList = z.union([z.string(), z.array(z.string())]).transform((v) => (typeof v === "string" ? [v] : v));

/** Model default options (Modelfile PARAMETER / create `parameters`): Ollama's option names; `stop` always a list. */
export const StoredParametersSchema = z
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
    /** Gantry's: speculative decoding by prompt lookup (tokens drafted a step; 0 = off). */
    draft_ngram: z.number().int().min(0).max(64),
    /** Gantry's: tokens drafted a step at least, paying or not (0 = as many as pay). */
    draft_min: z.number().int().min(0).max(64),
    stop: stopList,
    /** Gantry's: the draft model for speculative decoding, a model name in the store. */
    draft_model: z.string().trim().min(1),
  })
  .partial()
  .strict();
export type ModelParameters = z.infer<typeof StoredParametersSchema>;

export const StoredMessageShape = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string(),
});
export type StoredMessage = z.infer<typeof StoredMessageShape>;
