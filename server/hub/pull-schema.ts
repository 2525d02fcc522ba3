// Wire schema of POST /api/pull (Ollama's). Progress lines use ProgressSchema from api/store-schemas.ts.
import { z } from "zod";
import { modelOrName, wire } from "../api/wire.ts";

export const PullRequestSchema = z.preprocess(
  modelOrName,
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
