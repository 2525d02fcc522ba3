// What the pure renderers need of the operator's configuration: the server image and port, extra pod metadata, and
// the resource profiles ModelApps name. operator/config.ts parses the full config, which is one of these.
import { z } from "zod";
import { QuantitySchema, TolerationSchema } from "../api/v1alpha1/modelapp.ts";

export const ResourceProfileSchema = z.object({
  gpuResource: z
    .string()
    .min(1)
    .optional()
    .describe("Extended resource a GPU replica requests, e.g. nvidia.com/gpu; unset for CPU profiles."),
  nodeSelector: z.record(z.string(), z.string()).default({}).describe("Node selector of the profile's pods."),
  tolerations: z.array(TolerationSchema).default([]).describe("Tolerations of the profile's pods."),
  image: z
    .string()
    .min(1)
    .optional()
    .describe("Image variant for the profile (e.g. a CUDA build); the operator's image when unset."),
  runtimeClassName: z.string().min(1).optional(),
  cpu: QuantitySchema.optional().describe("Default CPU request per replica."),
  memory: QuantitySchema.optional().describe("Default memory request and limit per replica."),
  env: z
    .record(z.string(), z.string())
    .default({})
    .describe("Extra server environment for the profile (e.g. NODE_LLAMA_CPP_GPU=cuda)."),
});
export type ResourceProfile = z.infer<typeof ResourceProfileSchema>;

export interface RenderConfig {
  /** Image of the server pods (a profile's or the app's own image wins). */
  image: string;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never" | undefined;
  /** GANTRY_HUB_URL for the pods' model pulls; the public hub when unset. */
  hubUrl?: string | undefined;
  podLabels: Record<string, string>;
  podAnnotations: Record<string, string>;
  serverPort: number;
  profiles: Record<string, ResourceProfile>;
}
