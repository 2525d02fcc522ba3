// Content digests of store blobs. A digest from a client reaches file paths (blobs/sha256-<hex>), so it is validated
// against a strict pattern before any path is built: Ollama had a path-traversal CVE through an unchecked digest.
import { AppError } from "../common/errors.ts";

/** Normalised digest, always "sha256:<64 lower-case hex>". */
export type Digest = `sha256:${string}`;

const DIGEST_PATTERN = /^sha256[:-]([0-9a-fA-F]{64})$/;

/**
 * Parses "sha256:<hex>" or "sha256-<hex>" (hex in either case) into the normalised form; throws STORE_INVALID_DIGEST.
 */
export function parseDigest(value: string): Digest {
  const m = DIGEST_PATTERN.exec(value);
  if (!m)
    throw new AppError(
      "STORE_INVALID_DIGEST",
      `invalid digest "${value.slice(0, 100)}": expected sha256:<64 hex digits>`,
      { param: "digest" },
    );
  return `sha256:${m[1]!.toLowerCase()}`;
}

export const isDigest = (value: string): boolean => DIGEST_PATTERN.test(value);

/** The 64 hex digits of a digest (the form /api/tags reports). */
export const digestHex = (digest: Digest): string => digest.slice("sha256:".length);

/** File name of a blob inside blobs/: the ':' becomes '-', as Ollama stores it. */
export const blobFileName = (digest: Digest): string => `sha256-${digestHex(digest)}`;

/** The digest a blob file name stands for, or null when the name is not a blob (temp files, strays). */
export function digestFromFileName(name: string): Digest | null {
  return /^sha256-[0-9a-f]{64}$/.test(name) ? parseDigest(name) : null;
}

export const digestOf = (hex: string): Digest => parseDigest(`sha256:${hex}`);
