// Content-addressed blob files: blobs/sha256-<hex>. Writes go to a temp file in blobs/ while hashing, are verified,
// fsynced and then linked into place only if absent, so a blob file, once visible, is always complete and correct.
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AppError } from "../common/errors.ts";
import { blobFileName, digestFromFileName, digestOf, type Digest } from "./digest.ts";

export interface StoredBlob {
  digest: Digest;
  size: number;
}

export interface PutResult extends StoredBlob {
  /** False when the store already had this content. */
  created: boolean;
}

export type BlobSource = Uint8Array | string | Readable | AsyncIterable<Uint8Array>;

const TEMP_SUFFIX = "-partial";

/** sha256 and size of a file, streamed. */
export async function hashFile(file: string): Promise<StoredBlob> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { digest: digestOf(hash.digest("hex")), size };
}

const isErrno = (e: unknown, ...codes: string[]): boolean =>
  typeof e === "object" && e !== null && codes.includes((e as NodeJS.ErrnoException).code ?? "");

export class BlobStore {
  readonly dir: string;

  constructor(root: string) {
    this.dir = path.join(root, "blobs");
  }

  path(digest: Digest): string {
    return path.join(this.dir, blobFileName(digest));
  }

  async has(digest: Digest): Promise<boolean> {
    return (await this.size(digest)) !== null;
  }

  /** Size in bytes, or null when the blob is absent. */
  async size(digest: Digest): Promise<number | null> {
    try {
      return (await fs.stat(this.path(digest))).size;
    } catch (e) {
      if (isErrno(e, "ENOENT")) return null;
      throw e;
    }
  }

  /**
   * Stores content. With `expected`, a different digest fails with STORE_DIGEST_MISMATCH and nothing is stored.
   * Concurrent puts of the same content are safe: the first complete copy wins, the others are discarded.
   */
  async put(source: BlobSource, expected?: Digest): Promise<PutResult> {
    await fs.mkdir(this.dir, { recursive: true });
    const temp = path.join(this.dir, `tmp-${randomBytes(8).toString("hex")}${TEMP_SUFFIX}`);
    const hash = createHash("sha256");
    let size = 0;
    // Opened before the pipeline: a stream that opens lazily can create the file after a failed pipeline's cleanup.
    const handle = await fs.open(temp, "wx");
    try {
      const input =
        typeof source === "string" || source instanceof Uint8Array ? Readable.from([Buffer.from(source)]) : source;
      await pipeline(
        input,
        async function* (chunks: AsyncIterable<Uint8Array | string>) {
          for await (const chunk of chunks) {
            const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
            hash.update(buf);
            size += buf.length;
            yield buf;
          }
        },
        handle.createWriteStream({ flush: true }),
      ); // flush: fsync before close
      const digest = digestOf(hash.digest("hex"));
      if (expected && digest !== expected) {
        throw new AppError("STORE_DIGEST_MISMATCH", `digest mismatch: expected ${expected}, got ${digest}`, {
          param: "digest",
        });
      }
      return { digest, size, created: await this.linkIntoPlace(temp, digest) };
    } finally {
      await handle.close().catch(() => undefined); // already closed by the stream unless the pipeline failed early
      await fs.rm(temp, { force: true });
    }
  }

  /**
   * Stores a local file. A hard link is used when the file is on the same filesystem (no copy of a multi-GB GGUF);
   * otherwise the file is copied through put(), which hashes it again while copying.
   */
  async importFile(file: string, expected?: Digest): Promise<PutResult> {
    const hashed = await hashFile(file);
    if (expected && hashed.digest !== expected) {
      throw new AppError(
        "STORE_DIGEST_MISMATCH",
        `digest mismatch for ${file}: expected ${expected}, got ${hashed.digest}`,
      );
    }
    if (await this.has(hashed.digest)) return { ...hashed, created: false };
    await fs.mkdir(this.dir, { recursive: true });
    try {
      await fs.link(file, this.path(hashed.digest));
      return { ...hashed, created: true };
    } catch (e) {
      if (isErrno(e, "EEXIST")) return { ...hashed, created: false };
      if (!isErrno(e, "EXDEV", "EPERM", "EACCES", "ENOTSUP", "EOPNOTSUPP", "EMLINK")) throw e;
    }
    return this.put(createReadStream(file), hashed.digest);
  }

  /**
   * Moves into place a file whose sha256 the caller has already verified (a finished hub download), by hard link or
   * rename: no copy, no second hash. The file is gone afterwards. Returns whether this call created the blob.
   */
  async adoptVerified(file: string, digest: Digest): Promise<boolean> {
    await fs.mkdir(this.dir, { recursive: true });
    try {
      return await this.linkIntoPlace(file, digest);
    } finally {
      await fs.rm(file, { force: true });
    }
  }

  /** Removes a blob; false when it was not there. */
  async remove(digest: Digest): Promise<boolean> {
    try {
      await fs.unlink(this.path(digest));
      return true;
    } catch (e) {
      if (isErrno(e, "ENOENT")) return false;
      throw e;
    }
  }

  /** Every complete blob (temp files and strays are skipped). */
  async list(): Promise<StoredBlob[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, "ENOENT")) return [];
      throw e;
    }
    const blobs: StoredBlob[] = [];
    for (const name of names.sort()) {
      const digest = digestFromFileName(name);
      if (!digest) continue;
      const size = await this.size(digest);
      if (size !== null) blobs.push({ digest, size });
    }
    return blobs;
  }

  // link() fails when the target exists, so a blob is never replaced once visible. Filesystems without hard links
  // fall back to rename, which is still atomic and, the content being identical, harmless if a racer won.
  // Returns whether this call created the blob.
  private async linkIntoPlace(temp: string, digest: Digest): Promise<boolean> {
    const target = this.path(digest);
    try {
      await fs.link(temp, target);
      return true;
    } catch (e) {
      if (isErrno(e, "EEXIST")) return false;
      if (!isErrno(e, "EPERM", "ENOTSUP", "EOPNOTSUPP", "EMLINK")) throw e;
      await fs.rename(temp, target);
      return true;
    }
  }
}
