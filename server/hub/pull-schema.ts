// Wire schema of POST /api/pull (Ollama's). Progress lines use ProgressSchema from api/store-schemas.ts.
import { z } from "zod";
import { wire } from "../api/wire.ts";

/** Older Ollama clients send `name` where newer ones send `model`. */
const withModelAlias = (body: unknown): unknown =>
  body && typeof body === "object" && !Array.isArray(body) && !("model" in body) && "name" in body
    ? { ...body, model: (body as { name: unknown }).name }
    : body;

export const PullRequestSchema = z.preprocess(
  withModelAlias,
  wire(
    z.object({
      model: z.string().min(1, "model name is required"),
      /** Accepted for compatibility; hub pulls always use the configured GANTRY_HUB_URL. */
      insecure: z.boolean().optional(),
      stream: z.boolean().optional(),
    }),
  ),
);
export type PullRequest = z.infer<typeof PullRequestSchema>;
