// Split GGUF models in the store. Each part is an ordinary content-addressed blob (a model layer, in part order), but
// llama.cpp finds the other parts only next to the first one, by the name pattern `<prefix>-0000i-of-0000N.gguf`.
// So a split model also gets a directory `<store>/splits/<hex of first part>/model-0000i-of-0000N.gguf` of symlinks to
// its blobs; the engine loads the first link. Symlinks (not hard links) keep no data alive after `rm` drops the blobs.
import fs from "node:fs/promises";
import path from "node:path";
import type { BlobStore } from "./blobs.ts";
import { blobFileName, digestHex, type Digest } from "./digest.ts";

const pad = (n: number) => String(n).padStart(5, "0");

export const splitPartFileName = (part: number, count: number): string => `model-${pad(part)}-of-${pad(count)}.gguf`;

export const splitModelDir = (storeRoot: string, parts: readonly Digest[]): string =>
  path.join(storeRoot, "splits", digestHex(parts[0]!));

/** Path of the first part's link: what ModelSpec.modelPath is for a split model. */
export const splitModelPath = (storeRoot: string, parts: readonly Digest[]): string =>
  path.join(splitModelDir(storeRoot, parts), splitPartFileName(1, parts.length));

/** Creates (or repairs) the links of a split model and returns the first part's path. Idempotent. */
export async function linkSplitParts(storeRoot: string, blobs: BlobStore, parts: readonly Digest[]): Promise<string> {
  const dir = splitModelDir(storeRoot, parts);
  await fs.mkdir(dir, { recursive: true });
  for (const [i, digest] of parts.entries()) {
    const link = path.join(dir, splitPartFileName(i + 1, parts.length));
    const target = path.relative(dir, path.join(blobs.dir, blobFileName(digest)));
    const current = await fs.readlink(link).catch(() => null);
    if (current === target) continue;
    await fs.rm(link, { force: true });
    await fs.symlink(target, link);
  }
  return splitModelPath(storeRoot, parts);
}
