// Local GGUF files as models: `gantry run ./file.gguf` and `FROM ./model.gguf` in a Modelfile. The file is hashed
// locally and uploaded as a blob only when the server lacks it, so the same flow works against a remote server.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { GantryClient } from "../api/client.ts";
import { isLocalPath } from "../common/model-ref.ts";

/** A model reference that names a local GGUF file (any path ending in .gguf that is not a hub reference). */
export const isGgufPath = (ref: string): boolean => isLocalPath(ref) && ref.toLowerCase().endsWith(".gguf");

/** Expands "~" and makes a path absolute against `base`. */
export function resolveUserPath(p: string, base: string, home = os.homedir()): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return path.resolve(base, p);
}

/** The model name for a GGUF file: its base name without .gguf, lower-cased, anything outside [a-z0-9_.-] as "-". */
export function modelNameForFile(file: string): string {
  const base = path
    .basename(file)
    .replace(/\.gguf$/i, "")
    .toLowerCase();
  const clean = base
    .replace(/[^a-z0-9_.-]+/g, "-")
    .replace(/\.{2,}/g, ".")
    .replace(/^[^a-z0-9_]+/, "")
    .replace(/[-.]+$/, "")
    .slice(0, 80);
  return clean || "model";
}

export async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest("hex")}`;
}

/** Makes sure the server holds `file` as a blob; returns its digest. `say` reports an upload. */
export async function ensureBlob(client: GantryClient, file: string, say: (line: string) => void): Promise<string> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new Error(`file ${file} does not exist`);
  }
  if (!stat.isFile()) throw new Error(`${file} is not a file`);
  const digest = await sha256File(file);
  if (!(await client.hasBlob(digest))) {
    say(`copying file ${digest} (${path.basename(file)})`);
    await client.uploadBlob(digest, file);
  }
  return digest;
}

/** `files`/`adapters` maps of /api/create for local files: base name → digest (uploaded when missing). */
export async function uploadFiles(
  client: GantryClient,
  files: readonly string[],
  say: (line: string) => void,
): Promise<Record<string, string>> {
  const map: Record<string, string> = {};
  // The server tells model files by their .gguf name; a blob path (FROM of a `show --modelfile`) has none.
  for (const file of files)
    map[path.basename(file).replace(/(?<!\.gguf)$/i, ".gguf")] = await ensureBlob(client, file, say);
  return map;
}
