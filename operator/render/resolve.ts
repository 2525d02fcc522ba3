// Turns a ModelApp into everything the renderers need, or says why the spec cannot work (InvalidSpec). Pure.
// What the CRD's schema cannot check is checked here: the model reference grammar, the Modelfile overrides, the
// resource profile and whether GPUs make sense on it.
import { isAppError } from "../../server/common/errors.ts";
import { formatModelName } from "../../server/common/model-name.ts";
import { hubModelName } from "../../server/common/hub-ref.ts";
import { parseModelRef } from "../../server/common/model-ref.ts";
import { ModelfileSyntaxError } from "../../server/modelfile/errors.ts";
import { parseModelfile } from "../../server/modelfile/parse.ts";
import { parseModelAppSpec, type ModelApp, type ModelAppSpec } from "../api/v1alpha1/modelapp.ts";
import type { OperatorConfig, ResourceProfile } from "../config.ts";
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
  replicas: number;
}

export class InvalidSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidSpecError";
  }
}

const ALLOWED_OVERRIDES = new Set(["template", "system", "parameter", "message", "license", "requires"]);

function checkModelfile(model: string, text: string): string {
  const full = `FROM ${model}\n${text}`;
  let commands;
  try {
    commands = parseModelfile(full).commands;
  } catch (e) {
    // Line numbers of the overrides: the FROM put in front is line 1, so the user's line N is the parser's N+1.
    const msg =
      e instanceof ModelfileSyntaxError && e.line !== null
        ? e.message.replace(/^line \d+/, `line ${e.line - 1}`)
        : (e as Error).message;
    throw new InvalidSpecError(`spec.modelfile: ${msg}`);
  }
  const extra = commands.slice(1).find((c) => !ALLOWED_OVERRIDES.has(c.name));
  if (extra) {
    throw new InvalidSpecError(
      `spec.modelfile: ${extra.name.toUpperCase()} is not allowed here (spec.model is the FROM; use TEMPLATE, SYSTEM, PARAMETER, MESSAGE or LICENSE)`,
    );
  }
  return full.endsWith("\n") ? full : `${full}\n`;
}

function resolveProfile(
  spec: ModelAppSpec,
  config: OperatorConfig,
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
export function resolveApp(app: ModelApp, config: OperatorConfig): ResolvedApp {
  const parsed = parseModelAppSpec(app.spec);
  if (!parsed.ok) throw new InvalidSpecError(parsed.message);
  const spec = parsed.spec;
  let source: ResolvedApp["source"], modelName: string;
  try {
    const ref = parseModelRef(spec.model);
    if (ref.kind === "file") {
      throw new InvalidSpecError(
        `spec.model: "${spec.model}" is a file path; a pod cannot see files of your machine (use hf.co/<org>/<repo>[:<quant>] or a model name in the volume)`,
      );
    }
    source = ref.kind === "hub" ? "hub" : "volume";
    modelName = ref.kind === "hub" ? hubModelName(ref.hub) : formatModelName(ref.name);
  } catch (e) {
    if (e instanceof InvalidSpecError) throw e;
    throw new InvalidSpecError(`spec.model: ${isAppError(e) ? e.message : String(e)}`);
  }
  const { name: profileName, profile, gpus } = resolveProfile(spec, config);
  const modelfile = spec.modelfile?.trim() ? checkModelfile(spec.model, spec.modelfile) : undefined;
  const { minReplicas, maxReplicas } = spec.scaling;
  if (minReplicas > maxReplicas)
    throw new InvalidSpecError(`spec.scaling: minReplicas ${minReplicas} exceeds maxReplicas ${maxReplicas}`);
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
    servedModel: modelfile ? `${name}:latest` : modelName,
    ...(modelfile ? { modelfile } : {}),
    replicas,
  };
}
