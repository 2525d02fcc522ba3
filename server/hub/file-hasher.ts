// sha256 of a file that is being written, computed on a worker thread while the download goes on: the worker reads
// (from the page cache) up to the contiguous written prefix it is told about, so hashing overlaps the network instead
// of adding a full pass after it, and the event loop stays free for the socket.
import { Worker } from "node:worker_threads";
import { siblingModule } from "../common/package-files.ts";

const STEP = 4 << 20;

export class FileHasher {
  private readonly worker: Worker;
  private posted = 0;
  private readonly result: Promise<string>;

  constructor(file: string) {
    this.worker = new Worker(siblingModule(import.meta.url, "hash-worker"), { workerData: { file } });
    this.result = new Promise<string>((resolve, reject) => {
      this.worker.once("message", (m: { sha256?: string; error?: string }) =>
        m.sha256 ? resolve(m.sha256) : reject(new Error(`hashing failed: ${m.error}`)),
      );
      this.worker.once("error", reject);
    });
    this.result.catch(() => {}); // surfaced by finish()
  }

  /** The file is written from 0 up to `upTo`. */
  advance(upTo: number): void {
    if (upTo - this.posted < STEP) return;
    this.posted = upTo;
    this.worker.postMessage({ upTo });
  }

  /** The file is complete at `total` bytes: its sha256 (hex). */
  async finish(total: number): Promise<string> {
    this.worker.postMessage({ upTo: total, finish: true });
    try {
      return await this.result;
    } finally {
      await this.worker.terminate();
    }
  }

  async cancel(): Promise<void> {
    await this.worker.terminate();
  }
}
