// Shared fixtures of the operator's unit tests: a ModelApp as read from the API server, and an operator config.
import type { ModelApp, ModelAppSpecInput } from "../../../operator/api/v1alpha1/modelapp.ts";
import { parseOperatorConfig, type OperatorConfig } from "../../../operator/config.ts";
import { resolveApp, type ResolvedApp } from "../../../operator/render/resolve.ts";

export const MODEL = "hf.co/org/repo:Q4_K_M";

/** A ModelApp named acme/chat; `spec` is merged over {model: MODEL} (defaults are applied by the operator's parse). */
export function modelApp(
  spec: Partial<ModelAppSpecInput> = {},
  metadata: Partial<ModelApp["metadata"]> = {},
): ModelApp {
  return {
    apiVersion: "gantry.dev/v1alpha1",
    kind: "ModelApp",
    metadata: {
      name: "chat",
      namespace: "acme",
      uid: "u1",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...metadata,
    },
    // The spec is passed as a user writes it; resolveApp applies the defaults.
    spec: { model: MODEL, ...spec } as ModelApp["spec"],
  };
}

export const config = (input: Record<string, unknown> = {}): OperatorConfig => parseOperatorConfig(input);

export const resolved = (
  spec: Partial<ModelAppSpecInput> = {},
  cfg: OperatorConfig = config(),
  metadata: Partial<ModelApp["metadata"]> = {},
): ResolvedApp => resolveApp(modelApp(spec, metadata), cfg);
