// Hub model references and GGUF file selection. Pure: no I/O.
//
//   ref  = [ "https://" ] ( "hf.co" | "huggingface.co" ) "/" org "/" repo [ ":" tag ]
//   tag  = quant (case-insensitive, e.g. q4_k_m → Q4_K_M) | file name ending in ".gguf" | "latest" (= no tag)
//
// Selection from a repo's file list: the requested quant or file; by default Q4_K_M when present, else the smallest
// GGUF that is not a projector. A split set (`x-00001-of-00003.gguf` …) is one choice holding all its parts in order.
// The projector (mmproj*.gguf) of the same precision, else F16, else the smallest, comes along, as do the optional
// repo-root files `template`, `system` and `params` (Ollama's hf.co conventions).
import path from "node:path/posix";
import { AppError } from "../common/errors.ts";

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

/** A file of a hub repository, as the tree API lists it. */
export interface HubFile {
  path: string;
  size: number;
  /** The LFS sha256 (hex), when the file is stored in LFS. */
  sha256?: string;
}

export interface HubSelection {
  /** The model GGUF, or every part of a split set, in part order. */
  model: HubFile[];
  /** Quant label of the chosen model file, when its name carries one. */
  quant: string | null;
  projector?: HubFile;
  template?: HubFile;
  system?: HubFile;
  params?: HubFile;
}

const SCHEME = /^https?:\/\//i;
const REPO_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const MAX_PART = 96;

const badRef = (input: string, why: string) =>
  new AppError("MODEL_INVALID_NAME", `invalid hub reference "${input.slice(0, 200)}": ${why} (expected hf.co/<org>/<repo>[:<quant or file.gguf>])`, { param: "model" });

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
  if (!(HUB_HOSTS as readonly string[]).includes(host)) throw badRef(input, `host must be hf.co or huggingface.co, not "${host}"`);
  let body = slash < 0 ? "" : rest.slice(slash + 1).replace(/\/+$/, "");
  const colon = body.lastIndexOf(":");
  let tag: string | undefined;
  if (colon >= 0) {
    tag = body.slice(colon + 1);
    body = body.slice(0, colon);
    if (tag === "") throw badRef(input, "empty tag after ':'");
  }
  const parts = body.split("/");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") throw badRef(input, "need exactly <org>/<repo> after the host");
  const [org, repo] = parts as [string, string];
  for (const [kind, part] of [["org", org], ["repo", repo]] as const) {
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

const SPLIT_SUFFIX = /-(\d{5})-of-(\d{5})\.gguf$/i;
const QUANT = /^(?:I?Q\d(?:_[A-Z0-9]+)*|TQ\d_\d|BF16|FP?16|FP?32|MXFP4(?:_MOE)?)$/i;

export const isGguf = (p: string): boolean => p.toLowerCase().endsWith(".gguf");
export const isProjector = (p: string): boolean => isGguf(p) && path.basename(p).toLowerCase().includes("mmproj");

/** Split position of a file name: `x-00002-of-00003.gguf` → {part: 2, count: 3}. */
export function splitPart(fileName: string): { part: number; count: number; prefix: string } | null {
  const m = SPLIT_SUFFIX.exec(fileName);
  if (!m) return null;
  const part = Number(m[1]), count = Number(m[2]);
  if (part < 1 || count < 1 || part > count) return null;
  return { part, count, prefix: fileName.slice(0, m.index) };
}

/** The quant label a GGUF file name carries (the last name segment that looks like one), upper-cased. */
export function quantOf(fileName: string): string | null {
  const base = path.basename(fileName);
  const stem = base.replace(SPLIT_SUFFIX, "").replace(/\.gguf$/i, "");
  const segments = stem.split(/[-.]/);
  for (let i = segments.length - 1; i >= 0; i--) {
    if (QUANT.test(segments[i]!)) return segments[i]!.toUpperCase();
  }
  return null;
}

interface Choice {
  files: HubFile[];
  quant: string | null;
  size: number;
}

/** Model choices of a repo: single GGUFs and complete split sets (incomplete sets are left out). */
function modelChoices(files: readonly HubFile[]): Choice[] {
  const choices: Choice[] = [];
  const sets = new Map<string, HubFile[]>();
  for (const f of files) {
    if (!isGguf(f.path) || isProjector(f.path)) continue;
    const split = splitPart(f.path);
    if (!split) {
      choices.push({ files: [f], quant: quantOf(f.path), size: f.size });
      continue;
    }
    const key = `${split.prefix}\0${split.count}`;
    sets.set(key, [...(sets.get(key) ?? []), f]);
  }
  for (const parts of sets.values()) {
    const count = splitPart(parts[0]!.path)!.count;
    const ordered = [...parts].sort((a, b) => splitPart(a.path)!.part - splitPart(b.path)!.part);
    const complete = ordered.length === count && ordered.every((f, i) => splitPart(f.path)!.part === i + 1);
    if (complete) choices.push({ files: ordered, quant: quantOf(ordered[0]!.path), size: ordered.reduce((a, f) => a + f.size, 0) });
  }
  return choices.sort((a, b) => a.size - b.size || a.files[0]!.path.localeCompare(b.files[0]!.path));
}

const availableQuants = (choices: readonly Choice[]): string => {
  const quants = [...new Set(choices.map((c) => c.quant ?? path.basename(c.files[0]!.path)))];
  return quants.length ? quants.join(", ") : "none";
};

function chooseModel(choices: Choice[], want: { quant?: string; file?: string }, repoLabel: string): Choice {
  if (choices.length === 0) throw new AppError("MODEL_NOT_FOUND", `${repoLabel} has no GGUF model files`, { param: "model" });
  if (want.file !== undefined) {
    const wanted = want.file.toLowerCase();
    const hit = (f: HubFile) => f.path.toLowerCase() === wanted || path.basename(f.path).toLowerCase() === wanted;
    const choice = choices.find((c) => c.files.some(hit));
    if (!choice) throw new AppError("MODEL_NOT_FOUND", `file ${want.file} not found in ${repoLabel}; available quants: ${availableQuants(choices)}`, { param: "model" });
    return choice;
  }
  const quant = (want.quant ?? DEFAULT_QUANT).toUpperCase();
  const byQuant = choices.filter((c) => c.quant === quant);
  if (byQuant.length) return byQuant[0]!;
  if (want.quant === undefined) return choices[0]!; // no Q4_K_M: the smallest model
  throw new AppError("MODEL_NOT_FOUND", `quant ${quant} not found in ${repoLabel}; available quants: ${availableQuants(choices)}`, { param: "model" });
}

function chooseProjector(files: readonly HubFile[], quant: string | null): HubFile | undefined {
  const projectors = files.filter((f) => isProjector(f.path)).sort((a, b) => a.size - b.size || a.path.localeCompare(b.path));
  const withQuant = (q: string) => projectors.find((f) => quantOf(f.path) === q);
  return (quant ? withQuant(quant) : undefined) ?? withQuant("F16") ?? projectors[0];
}

/** Picks the files to pull from a repo's file list. Throws MODEL_NOT_FOUND naming what is available. */
export function selectGgufFiles(files: readonly HubFile[], want: { quant?: string; file?: string }, repoLabel = "the repository"): HubSelection {
  if (want.file !== undefined && isProjector(want.file)) {
    throw new AppError("BAD_REQUEST", `${want.file} is a projector (mmproj) file, not a model; name the model file or quant instead`, { param: "model" });
  }
  const model = chooseModel(modelChoices(files), want, repoLabel);
  const selection: HubSelection = { model: model.files, quant: model.quant };
  const projector = chooseProjector(files, model.quant);
  if (projector) selection.projector = projector;
  for (const name of ["template", "system", "params"] as const) {
    const f = files.find((x) => x.path === name);
    if (f) selection[name] = f;
  }
  return selection;
}
