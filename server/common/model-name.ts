// Model names. Pure: no I/O.
//
// Grammar (Ollama's, with Gantry's defaults):
//
//   name      = [ [ host "/" ] namespace "/" ] model [ ":" tag ]
//   host      = label { "." label } [ ":" port ]          e.g. hf.co, gantry.local, localhost:5000
//   namespace = alnum { alnum | "_" | "-" | "." }          at most 80 characters
//   model     = (alnum | "_") { alnum | "_" | "-" | "." }  at most 80 characters
//   tag       = (alnum | "_") { alnum | "_" | "-" | "." }  at most 80 characters
//
// Defaults: host "gantry.local", namespace "library", tag "latest". Two segments are namespace/model; three are
// host/namespace/model, so hub names `hf.co/<org>/<repo>:<quant>` keep their parts (huggingface.co is an alias of
// hf.co, and Ollama's registry.ollama.ai of the default host: "registry.ollama.ai/library/smollm2" is "smollm2"). No
// part may contain "..", and no part may start with "." — parts become directories of the manifest path, so none may
// be longer than a file name may be (255 bytes): the host, the only part without a tighter limit, is checked for it.
// Names are case-insensitive (as in Ollama): parsing keeps the spelling (hub lookups need it), `nameKey` gives the
// comparison key. The display name drops the default host and namespace and always shows the tag: "smollm2:135m".
import { AppError } from "./errors.ts";

export const DEFAULT_HOST = "gantry.local";
export const DEFAULT_NAMESPACE = "library";
export const DEFAULT_TAG = "latest";
export const HF_HOST = "hf.co";

export interface ModelName {
  host: string;
  namespace: string;
  model: string;
  tag: string;
}

const MAX_PART = 80;
/** The longest file name (path segment) Linux, macOS and Windows file systems allow, in bytes. */
export const MAX_PATH_SEGMENT_BYTES = 255;
const MAX_HOST = MAX_PATH_SEGMENT_BYTES;
const HOST =
  /^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?$/;
const NAMESPACE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const MODEL_OR_TAG = /^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$/;
const HOST_ALIASES: Record<string, string> = { "huggingface.co": HF_HOST, "registry.ollama.ai": DEFAULT_HOST };

const invalid = (name: string, why: string) =>
  new AppError("MODEL_INVALID_NAME", `invalid model name "${name.slice(0, 120)}": ${why}`, { param: "model" });

function checkPart(full: string, kind: string, part: string, pattern: RegExp, max: number): void {
  if (part === "") throw invalid(full, `empty ${kind}`);
  if (Buffer.byteLength(part, "utf8") > max)
    throw invalid(
      full,
      max === MAX_PATH_SEGMENT_BYTES
        ? `${kind} longer than ${max} bytes (the file system's limit for a path segment)`
        : `${kind} longer than ${max} characters`,
    );
  if (part.includes("..")) throw invalid(full, `${kind} must not contain ".."`);
  if (!pattern.test(part)) throw invalid(full, `${kind} "${part.slice(0, 100)}" has invalid characters`);
}

/** Parses a model name, filling in defaults. Throws MODEL_INVALID_NAME. */
export function parseModelName(input: string): ModelName {
  const full = input.trim();
  if (full === "") throw invalid(input, "empty name");
  const slash = full.lastIndexOf("/");
  const colon = full.lastIndexOf(":");
  // A ':' before the last '/' belongs to a host port, not to a tag.
  const hasTag = colon > slash;
  const path = hasTag ? full.slice(0, colon) : full;
  const tag = hasTag ? full.slice(colon + 1) : DEFAULT_TAG;
  const parts = path.split("/");
  if (parts.length > 3) throw invalid(full, "too many '/' separated parts (at most host/namespace/model)");
  const model = parts[parts.length - 1]!;
  const namespace = parts.length >= 2 ? parts[parts.length - 2]! : DEFAULT_NAMESPACE;
  let host = parts.length === 3 ? parts[0]! : DEFAULT_HOST;
  if (parts.length === 3) {
    checkPart(full, "host", host, HOST, MAX_HOST);
    host = HOST_ALIASES[host.toLowerCase()] ?? host;
  }
  checkPart(full, "namespace", namespace, NAMESPACE, MAX_PART);
  checkPart(full, "model", model, MODEL_OR_TAG, MAX_PART);
  checkPart(full, "tag", tag, MODEL_OR_TAG, MAX_PART);
  return { host, namespace, model, tag };
}

/** Short display name: default host and namespace dropped, tag always shown. */
export function formatModelName(n: ModelName): string {
  const isDefaultHost = n.host.toLowerCase() === DEFAULT_HOST;
  const prefix =
    isDefaultHost && n.namespace.toLowerCase() === DEFAULT_NAMESPACE
      ? ""
      : isDefaultHost
        ? `${n.namespace}/`
        : `${n.host}/${n.namespace}/`;
  return `${prefix}${n.model}:${n.tag}`;
}

/** Fully qualified name host/namespace/model:tag. */
export const qualifiedModelName = (n: ModelName): string => `${n.host}/${n.namespace}/${n.model}:${n.tag}`;

/** Relative manifest path segments under manifests/: [host, namespace, model, tag]. */
export const toManifestPath = (n: ModelName): [string, string, string, string] => [n.host, n.namespace, n.model, n.tag];

/** The name a manifest path stands for (inverse of toManifestPath); throws MODEL_INVALID_NAME for stray paths. */
export function fromManifestPath(segments: readonly string[]): ModelName {
  if (segments.length !== 4) throw invalid(segments.join("/"), "manifest path must be host/namespace/model/tag");
  const [host, namespace, model, tag] = segments as [string, string, string, string];
  const parsed = parseModelName(`${host}/${namespace}/${model}:${tag}`);
  if (parsed.host !== host) throw invalid(segments.join("/"), "manifest path uses a host alias");
  return parsed;
}

/** Case-insensitive comparison key. */
export const nameKey = (n: ModelName): string => qualifiedModelName(n).toLowerCase();

export const sameModelName = (a: ModelName, b: ModelName): boolean => nameKey(a) === nameKey(b);

/** Normalised display form of a name string ("SmolLM2" → "SmolLM2:latest"); throws MODEL_INVALID_NAME. */
export const displayName = (input: string): string => formatModelName(parseModelName(input));
