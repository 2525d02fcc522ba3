// GGUF file selection from a hub repository's file list (the reference grammar is server/common/hub-ref.ts). Pure.
//
// Selection from a repo's file list: the requested quant or file; by default Q4_K_M when present, else the smallest
// GGUF that is not a projector. A split set (`x-00001-of-00003.gguf` …) is one choice holding all its parts in order.
// The projector (mmproj*.gguf) of the same precision, else F16, else the smallest, comes along, as do the optional
// repo-root files `template`, `system` and `params` (Ollama's hf.co conventions).
import path from "node:path/posix";
import { AppError } from "../common/errors.ts";
import { DEFAULT_QUANT } from "../common/hub-ref.ts";

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

const SPLIT_SUFFIX = /-(\d{5})-of-(\d{5})\.gguf$/i;
const QUANT = /^(?:I?Q\d(?:_[A-Z0-9]+)*|TQ\d_\d|BF16|FP?16|FP?32|MXFP4(?:_MOE)?)$/i;

export const isGguf = (p: string): boolean => p.toLowerCase().endsWith(".gguf");
export const isProjector = (p: string): boolean => isGguf(p) && path.basename(p).toLowerCase().includes("mmproj");

/** Split position of a file name: `x-00002-of-00003.gguf` → {part: 2, count: 3}. */
export function splitPart(fileName: string): { part: number; count: number; prefix: string } | null {
  const m = SPLIT_SUFFIX.exec(fileName);
  if (!m) return null;
  const part = Number(m[1]),
    count = Number(m[2]);
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
    if (complete)
      choices.push({ files: ordered, quant: quantOf(ordered[0]!.path), size: ordered.reduce((a, f) => a + f.size, 0) });
  }
  return choices.sort((a, b) => a.size - b.size || a.files[0]!.path.localeCompare(b.files[0]!.path));
}

const availableQuants = (choices: readonly Choice[]): string => {
  const quants = [...new Set(choices.map((c) => c.quant ?? path.basename(c.files[0]!.path)))];
  return quants.length ? quants.join(", ") : "none";
};

function chooseModel(choices: Choice[], want: { quant?: string; file?: string }, repoLabel: string): Choice {
  if (choices.length === 0)
    throw new AppError("MODEL_NOT_FOUND", `${repoLabel} has no GGUF model files`, { param: "model" });
  if (want.file !== undefined) {
    const wanted = want.file.toLowerCase();
    const hit = (f: HubFile) => f.path.toLowerCase() === wanted || path.basename(f.path).toLowerCase() === wanted;
    const choice = choices.find((c) => c.files.some(hit));
    if (!choice)
      throw new AppError(
        "MODEL_NOT_FOUND",
        `file ${want.file} not found in ${repoLabel}; available quants: ${availableQuants(choices)}`,
        { param: "model" },
      );
    return choice;
  }
  const quant = (want.quant ?? DEFAULT_QUANT).toUpperCase();
  const byQuant = choices.filter((c) => c.quant === quant);
  if (byQuant.length) return byQuant[0]!;
  if (want.quant === undefined) return choices[0]!; // no Q4_K_M: the smallest model
  throw new AppError(
    "MODEL_NOT_FOUND",
    `quant ${quant} not found in ${repoLabel}; available quants: ${availableQuants(choices)}`,
    { param: "model" },
  );
}

function chooseProjector(files: readonly HubFile[], quant: string | null): HubFile | undefined {
  const projectors = files
    .filter((f) => isProjector(f.path))
    .sort((a, b) => a.size - b.size || a.path.localeCompare(b.path));
  const withQuant = (q: string) => projectors.find((f) => quantOf(f.path) === q);
  // As Ollama and llama-server's -hf: the projector's precision matters more than its size (it is small next to the
  // model), so F16, else Q8_0, before the smallest.
  return (quant ? withQuant(quant) : undefined) ?? withQuant("F16") ?? withQuant("Q8_0") ?? projectors[0];
}

/** Picks the files to pull from a repo's file list. Throws MODEL_NOT_FOUND naming what is available. */
export function selectGgufFiles(
  files: readonly HubFile[],
  want: { quant?: string; file?: string },
  repoLabel = "the repository",
): HubSelection {
  if (want.file !== undefined && isProjector(want.file)) {
    throw new AppError(
      "BAD_REQUEST",
      `${want.file} is a projector (mmproj) file, not a model; name the model file or quant instead`,
      { param: "model" },
    );
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
