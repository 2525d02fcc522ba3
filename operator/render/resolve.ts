// Turns a ModelApp into everything the renderers need, or says why the spec cannot work (InvalidSpec). Pure.
// What the CRD's schema cannot check is checked here: the spec alone (api/v1alpha1/spec-checks.ts: model reference,
// Modelfile overrides, scaling bounds), then the resource profile and whether GPUs make sense on it.
import { parseModelAppSpec, type ModelApp, type ModelAppSpec } from "../api/v1alpha1/modelapp.ts";
import { checkSpec, InvalidSpecError, servedModelName, type CheckedSpec } from "../api/v1alpha1/spec-checks.ts";
import type { RenderConfig, ResourceProfile } from "./config.ts";
import type { AppIdentity } from "./labels.ts";

export interface ResolvedApp extends AppIdentity {
  generation: number;
  spec: ModelAppSpec;
  profileName: string;
  profile: ResourceProfile;
  gpus: number;
  /** Whether the model comes from the hub (the init container pulls it) or must already be in the volume. */
  source: "hub" | "volume";
  /** The model name the server loads: the pulled model's store name, or the app's own when a Modelfile applies. */
  servedModel: string;
  /** FROM line plus the spec's overrides, when spec.modelfile is set. */
  modelfile?: string;
  /** spec.server.draftModel, checked: a second prepare step pulls it. */
  draft?: CheckedSpec["draft"];
  replicas: number;
}

export { InvalidSpecError };

function resolveProfile(
  spec: ModelAppSpec,
  config: RenderConfig,
): { name: string; profile: ResourceProfile; gpus: number } {
  const name = spec.resources.profile;
  const profile = config.profiles[name];
  if (!profile) {
    throw new InvalidSpecError(
      `spec.resources.profile: unknown resource profile "${name}" (this operator has: ${Object.keys(config.profiles).sort().join(", ")})`,
    );
  }
  const gpus = spec.resources.gpus ?? (profile.gpuResource ? 1 : 0);
  if (gpus > 0 && !profile.gpuResource) {
    throw new InvalidSpecError(
      `spec.resources.gpus: profile "${name}" has no GPUs; choose a GPU profile (${
        Object.entries(config.profiles)
          .filter(([, p]) => p.gpuResource)
          .map(([n]) => n)
          .sort()
          .join(", ") || "none configured"
      })`,
    );
  }
  return { name, profile, gpus };
}

/** Resolves a ModelApp, or throws InvalidSpecError with a message that says what to change. */
export function resolveApp(app: ModelApp, config: RenderConfig): ResolvedApp {
  const parsed = parseModelAppSpec(app.spec);
  if (!parsed.ok) throw new InvalidSpecError(parsed.message);
  const spec = parsed.spec;
  const checked = checkSpec(spec);
  const { source, modelfile, draft } = checked;
  const { name: profileName, profile, gpus } = resolveProfile(spec, config);
  const { minReplicas, maxReplicas } = spec.scaling;
  const replicas = Math.min(maxReplicas, Math.max(minReplicas, spec.replicas ?? minReplicas));
  const name = app.metadata.name,
    namespace = app.metadata.namespace ?? "default";
  return {
    name,
    namespace,
    uid: app.metadata.uid ?? "",
    generation: app.metadata.generation ?? 0,
    spec,
    profileName,
    profile,
    gpus,
    source,
    servedModel: servedModelName(name, checked),
    ...(modelfile ? { modelfile } : {}),
    ...(draft ? { draft } : {}),
    replicas,
  };
}
