// What a ModelApp spec must satisfy beyond its schema, checked from the spec alone: the model reference grammar (a
// pod cannot see files of the user's machine), the Modelfile overrides, and the scaling bounds. The operator runs
// these when it resolves an app (an InvalidSpec condition); `gantry deploy` runs them before it applies one, so a bad
// app file fails on the user's machine. What needs the operator's configuration (resource profiles) is checked there.
// Pure.
import { isAppError } from "../../../server/common/errors.ts";
import { hubModelName } from "../../../server/common/hub-ref.ts";
import { formatModelName } from "../../../server/common/model-name.ts";
import { parseModelRef } from "../../../server/common/model-ref.ts";
import { ModelfileSyntaxError } from "../../../server/common/modelfile/errors.ts";
import { parseModelfile } from "../../../server/common/modelfile/parse.ts";
import type { ModelAppSpec } from "./modelapp.ts";

export class InvalidSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidSpecError";
  }
}

export interface CheckedSpec {
  /** Whether the model comes from the hub (the init container pulls it) or must already be in the volume. */
  source: "hub" | "volume";
  /** The model's name in the store: the pulled hub model's, or the named one. */
  modelName: string;
  /** FROM line plus the spec's overrides, when spec.modelfile or spec.server.draftModel is set. */
  modelfile?: string;
  /** spec.server.draftModel: where it comes from and its name in the store (PARAMETER draft_model names it). */
  draft?: { source: "hub" | "volume"; modelName: string };
}

const ALLOWED_OVERRIDES = new Set(["template", "system", "parameter", "message", "license", "requires"]);

function checkModel(model: string, field = "spec.model"): Omit<CheckedSpec, "modelfile" | "draft"> {
  try {
    const ref = parseModelRef(model);
    if (ref.kind === "file") {
      throw new InvalidSpecError(
        `${field}: "${model}" is a file path; a pod cannot see files of your machine (use hf.co/<org>/<repo>[:<quant>] or a model name in the volume)`,
      );
    }
    return ref.kind === "hub"
      ? { source: "hub", modelName: hubModelName(ref.hub) }
      : { source: "volume", modelName: formatModelName(ref.name) };
  } catch (e) {
    if (e instanceof InvalidSpecError) throw e;
    throw new InvalidSpecError(`${field}: ${isAppError(e) ? e.message : String(e)}`);
  }
}

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

/**
 * The checks that do not depend on where the app runs: the Modelfile overrides (returned as a full Modelfile) and the
 * scaling bounds. A local run (`gantry run <file>::<export>`) may also serve a model file of this machine.
 */
export function checkOverrides(spec: ModelAppSpec): string | undefined {
  const modelfile = spec.modelfile?.trim() ? checkModelfile(spec.model, spec.modelfile) : undefined;
  const { minReplicas, maxReplicas } = spec.scaling;
  if (minReplicas > maxReplicas)
    throw new InvalidSpecError(`spec.scaling: minReplicas ${minReplicas} exceeds maxReplicas ${maxReplicas}`);
  return modelfile;
}

/** Checks a parsed spec (defaults applied) for a cluster; throws InvalidSpecError naming the field and the fix. */
export function checkSpec(spec: ModelAppSpec): CheckedSpec {
  const model = checkModel(spec.model);
  const draftRef = spec.server.draftModel;
  const draft = draftRef !== undefined ? checkModel(draftRef, "spec.server.draftModel") : undefined;
  const overrides = checkOverrides(spec);
  // The served model drafts with the draft model as the store names it once pulled.
  const modelfile = draft
    ? `${overrides ?? `FROM ${spec.model}\n`}PARAMETER draft_model ${draft.modelName}\n`
    : overrides;
  return { ...model, ...(modelfile ? { modelfile } : {}), ...(draft ? { draft } : {}) };
}

/** The model an app's pods serve: `<app>:latest` when a Modelfile applies (prepare creates it), else the model. */
export const servedModelName = (appName: string, checked: CheckedSpec): string =>
  checked.modelfile ? `${appName}:latest` : checked.modelName;

/** The name requests send as `model` to an app's pods, or undefined when the spec cannot work. */
export function servedModelOf(appName: string, spec: ModelAppSpec): string | undefined {
  try {
    return servedModelName(appName, checkSpec(spec));
  } catch (e) {
    if (e instanceof InvalidSpecError) return undefined;
    throw e;
  }
}
