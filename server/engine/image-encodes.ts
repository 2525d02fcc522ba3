// A vision model's encoded images, kept by image id (the SHA-256 of the image's bytes) in an LRU bounded by the
// embeddings' bytes: the same image sent by another client, or again after its sequence's KV cells were reused, is
// decoded from the kept embeddings instead of being encoded again (the encode is most of an image's prompt cost).
// Concurrent requests for one image share one encode. An entry evicted while a request still uses it is freed when
// that request is done with it.
import type { EncodedMedia } from "./native/mtmd.ts";

/** Default bound on the kept embeddings: 10 LLaVA-1.5 images (576 x 4096 floats) or thousands of small ones. */
export const DEFAULT_ENCODE_CACHE_BYTES = 96 * 1024 * 1024;

interface Entry {
  media: Promise<EncodedMedia>;
  /** 0 until the encode resolves. */
  bytes: number;
  /** Requests using the embeddings now. */
  users: number;
  /** Out of the cache: freed when the last user is done. */
  evicted: boolean;
}

const free = (entry: Entry): Promise<void> =>
  entry.evicted && entry.users === 0
    ? entry.media.then(
        (m) => m.dispose(),
        () => undefined,
      )
    : Promise.resolve();

export class ImageEncodes {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxBytes: number;

  constructor(maxBytes = DEFAULT_ENCODE_CACHE_BYTES) {
    this.maxBytes = maxBytes;
  }

  /**
   * Runs `use` with the image's embeddings: kept ones (the entry becomes the most recent), or `encode()`'s, which are
   * then kept (the least recently used go while the bound is passed; a failed encode is not kept). `encoded` says
   * whether this call encoded. The embeddings stay valid until `use` settles.
   */
  async with<T>(
    id: string,
    encode: () => Promise<EncodedMedia>,
    use: (media: EncodedMedia, encoded: boolean) => Promise<T>,
  ): Promise<T> {
    let entry = this.entries.get(id);
    const encoded = !entry;
    if (entry) {
      this.entries.delete(id);
      this.entries.set(id, entry);
    } else {
      const added: Entry = (entry = { media: encode(), bytes: 0, users: 0, evicted: false });
      this.entries.set(id, added);
      added.media.then(
        (m) => {
          if (added.evicted) return;
          added.bytes = m.bytes;
          this.bytes += m.bytes;
          this.evict();
        },
        () => {
          if (this.entries.get(id) === added) this.entries.delete(id);
          added.evicted = true;
        },
      );
    }
    entry.users++;
    try {
      return await use(await entry.media, encoded);
    } finally {
      entry.users--;
      void free(entry);
    }
  }

  /** Images kept (or being encoded). */
  get size(): number {
    return this.entries.size;
  }

  /** Frees every kept encoding (one still in use: when its user is done). Before the projector is disposed. */
  async clear(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    this.bytes = 0;
    await Promise.all(
      all.map((entry) => {
        entry.evicted = true;
        return free(entry);
      }),
    );
  }

  /** Drops the least recently used finished encodings until the bound holds (never the most recent one). */
  private evict(): void {
    const newest = [...this.entries.keys()].at(-1);
    for (const [id, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) return;
      if (id === newest || entry.bytes === 0) continue;
      this.entries.delete(id);
      this.bytes -= entry.bytes;
      entry.evicted = true;
      void free(entry);
    }
  }
}
