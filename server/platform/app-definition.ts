// App definitions, the platform's unit of deployment: an app file exports `defineApp({ model, resources, scaling, … })`
// (or a possibly async function returning one), and `gantry deploy <file>::<export>` turns it into a ModelApp. The
// spec's type is the ModelApp spec schema's input type, so an app file type-checks in an editor against the same
// schema the operator validates with.
import type { ModelAppSpecInput } from "../../operator/api/v1alpha1/modelapp.ts";

/** Marks definitions; Symbol.for, so a definition made by another copy of the package is still recognised. */
const APP_DEFINITION: unique symbol = Symbol.for("gantry.dev/app-definition");

/**
 * An app's ModelApp spec as written in an app file (the operator fills in the defaults). `replicas` is left out: the
 * autoscaler sets it between scaling.minReplicas and scaling.maxReplicas.
 */
export type AppSpec = Omit<ModelAppSpecInput, "replicas">;

/** What defineApp returns: the spec, marked as an app definition. */
export type AppDefinition = Readonly<AppSpec> & { readonly [APP_DEFINITION]: true };

/**
 * Declares an app: `export const chat = defineApp({ model: "hf.co/…", scaling: { minReplicas: 0, maxReplicas: 3 } })`.
 * Nothing is validated here: `gantry run|deploy` validates it and names the file, the export and the field.
 */
export function defineApp(spec: AppSpec): AppDefinition {
  return Object.defineProperty({ ...spec }, APP_DEFINITION, { value: true, enumerable: false }) as AppDefinition;
}

export const isAppDefinition = (value: unknown): value is AppDefinition =>
  typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[APP_DEFINITION] === true;
