// Model references: what every gantry command, the API's `model` fields and a ModelApp's `spec.model` accept.
// Pure: no I/O.
//
//   model_ref = hub_ref | gguf_path | name
//   hub_ref   = hf.co/<org>/<repo>[:<quant or file.gguf>]       (grammar: hub-ref.ts)
//   gguf_path = a path starting with "/", "./", "../" or "~", or any text ending in ".gguf" that is not a hub_ref
//   name      = [[host/]namespace/]model[:tag]                 (grammar: model-name.ts; tag "latest" by default)
import { AppError } from "./errors.ts";
import { isHubRef, parseHubRef, type HubRef } from "./hub-ref.ts";
import { parseModelName, type ModelName } from "./model-name.ts";

export type ModelRef =
  { kind: "hub"; hub: HubRef } | { kind: "file"; path: string } | { kind: "name"; name: ModelName };

/** Whether a reference names a local file rather than a model: "/x", "./x", "../x", "~/x", or "*.gguf". */
export function isLocalPath(ref: string): boolean {
  // A hub reference may end in ".gguf" when the full file name is used as the tag.
  if (isHubRef(ref)) return false;
  return (
    ref.startsWith("/") ||
    ref.startsWith("./") ||
    ref.startsWith("../") ||
    ref.startsWith("~") ||
    ref.toLowerCase().endsWith(".gguf")
  );
}

/** Classifies and validates a model reference. Throws MODEL_INVALID_NAME saying what is wrong. */
export function parseModelRef(input: string): ModelRef {
  const ref = input.trim();
  if (ref === "") throw new AppError("MODEL_INVALID_NAME", "empty model reference", { param: "model" });
  if (isHubRef(ref)) return { kind: "hub", hub: parseHubRef(ref) };
  if (isLocalPath(ref)) return { kind: "file", path: ref };
  return { kind: "name", name: parseModelName(ref) };
}
