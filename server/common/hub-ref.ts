// Hub model references: the grammar of `hf.co/<org>/<repo>[:<quant or file.gguf>]`. Pure: no I/O.
//
//   ref  = [ "https://" ] ( "hf.co" | "huggingface.co" ) "/" org "/" repo [ ":" tag ]
//   tag  = quant (case-insensitive, e.g. q4_k_m → Q4_K_M) | file name ending in ".gguf" | "latest" (= no tag)
import { AppError } from "./errors.ts";

export const HUB_HOSTS = ["hf.co", "huggingface.co"] as const;
export const DEFAULT_QUANT = "Q4_K_M";
export const DEFAULT_REVISION = "main";

export interface HubRef {
  org: string;
  repo: string;
  /** Upper-cased quant label, e.g. "Q4_K_M". */
  quant?: string;
  /** An exact GGUF file name given as the tag. */
  file?: string;
  revision: string;
}

const SCHEME = /^https?:\/\//i;
const REPO_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const MAX_PART = 96;

const badRef = (input: string, why: string) =>
  new AppError(
    "MODEL_INVALID_NAME",
    `invalid hub reference "${input.slice(0, 200)}": ${why} (expected hf.co/<org>/<repo>[:<quant or file.gguf>])`,
    { param: "model" },
  );

/** True when the text names a hub model (hf.co/…, huggingface.co/…, with or without https://). */
export function isHubRef(input: string): boolean {
  const host = input.trim().replace(SCHEME, "").split("/")[0]!.toLowerCase();
  return (HUB_HOSTS as readonly string[]).includes(host);
}

/** Parses a hub reference. Throws MODEL_INVALID_NAME with what is wrong. */
export function parseHubRef(input: string): HubRef {
  const text = input.trim();
  const rest = text.replace(SCHEME, "");
  const slash = rest.indexOf("/");
  const host = (slash < 0 ? rest : rest.slice(0, slash)).toLowerCase();
  if (!(HUB_HOSTS as readonly string[]).includes(host))
    throw badRef(input, `host must be hf.co or huggingface.co, not "${host}"`);
  let body = slash < 0 ? "" : rest.slice(slash + 1).replace(/\/+$/, "");
  const colon = body.lastIndexOf(":");
  let tag: string | undefined;
  if (colon >= 0) {
    tag = body.slice(colon + 1);
    body = body.slice(0, colon);
    if (tag === "") throw badRef(input, "empty tag after ':'");
  }
  const parts = body.split("/");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "")
    throw badRef(input, "need exactly <org>/<repo> after the host");
  const [org, repo] = parts as [string, string];
  for (const [kind, part] of [
    ["org", org],
    ["repo", repo],
  ] as const) {
    if (part.length > MAX_PART) throw badRef(input, `${kind} longer than ${MAX_PART} characters`);
    if (!REPO_PART.test(part) || part.includes("..")) throw badRef(input, `${kind} "${part}" has invalid characters`);
  }
  const ref: HubRef = { org, repo, revision: DEFAULT_REVISION };
  if (tag === undefined || tag.toLowerCase() === "latest") return ref;
  if (!TAG.test(tag) || tag.includes("..")) throw badRef(input, `tag "${tag}" has invalid characters`);
  if (tag.toLowerCase().endsWith(".gguf")) return { ...ref, file: tag };
  return { ...ref, quant: tag.toUpperCase() };
}

/** "hf.co/org/repo" for messages. */
export const hubRepoLabel = (ref: Pick<HubRef, "org" | "repo">): string => `hf.co/${ref.org}/${ref.repo}`;

/** The store name a pulled model is kept under: hf.co/<org>/<repo>:<quant | file | latest>. */
export const hubModelName = (ref: HubRef): string => `${hubRepoLabel(ref)}:${ref.quant ?? ref.file ?? "latest"}`;
