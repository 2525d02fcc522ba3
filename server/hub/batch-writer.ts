// Writes a stream of network chunks to a file at increasing offsets, in batches of about `batchBytes` (one writev
// per batch instead of one write per 64 KiB chunk), with one batch being written while the next is collected.
// `onWritten(end)` reports the file offset up to which data is on disk; progress is only ever claimed after that.
// A batch that stops growing (a slow or stalled link) is written after `idleMs`, so progress shows what arrived.
import type { FileHandle } from "node:fs/promises";

export class BatchWriter {
  private readonly file: FileHandle;
  private readonly onWritten: (end: number) => void;
  private readonly batchBytes: number;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Offset where the pending batch starts. */
  private position: number;
  private inflight: Promise<void> = Promise.resolve();
  /** Batches started and not yet written. */
  private queued = 0;
  private readonly idleMs: number;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    file: FileHandle,
    position: number,
    onWritten: (end: number) => void,
    opts: { batchBytes?: number; idleMs?: number } = {},
  ) {
    this.file = file;
    this.position = position;
    this.onWritten = onWritten;
    this.batchBytes = opts.batchBytes ?? 4 << 20;
    this.idleMs = opts.idleMs ?? 100;
  }

  /**
   * Adds a chunk. Returns null, or — when a batch is full while the previous one is still being written — a promise
   * to wait for before pushing more (the caller pauses its source: memory stays bounded to about two batches).
   */
  push(chunk: Uint8Array): Promise<void> | null {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= this.batchBytes) {
      const previous = this.startBatch();
      return this.queued > 1 ? previous : null;
    }
    this.idle ??= setTimeout(() => {
      this.idle = undefined;
      void this.startBatch().catch(() => {});
    }, this.idleMs);
    return null;
  }

  /** Writes everything collected; resolves when it is on disk. */
  async flush(): Promise<void> {
    void this.startBatch().catch(() => {});
    await this.inflight;
  }

  // Takes the pending chunks at once and chains their write after the previous one, so writes land (and are
  // reported) in order. Resolves when the previous write is done: one batch on its way while the next is collected.
  private startBatch(): Promise<void> {
    clearTimeout(this.idle);
    this.idle = undefined;
    const previous = this.inflight;
    if (this.pendingBytes === 0) return previous;
    const buffers = this.pending,
      at = this.position,
      end = at + this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    this.position = end;
    this.queued++;
    this.inflight = previous
      .then(() => this.writeAll(buffers, at))
      .then(() => this.onWritten(end))
      .finally(() => {
        this.queued--;
      });
    this.inflight.catch(() => {}); // reported by the next push() or flush()
    return previous;
  }

  private async writeAll(buffers: Uint8Array[], at: number): Promise<void> {
    let { bytesWritten } = await this.file.writev(buffers, at);
    const total = buffers.reduce((a, b) => a + b.length, 0);
    // writev may write less than asked (rare, e.g. signals): finish the rest from where it stopped.
    while (bytesWritten < total) {
      const rest = Buffer.concat(buffers).subarray(bytesWritten);
      bytesWritten += (await this.file.write(rest, 0, rest.length, at + bytesWritten)).bytesWritten;
    }
  }
}
