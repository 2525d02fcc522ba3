// One download per blob per process: concurrent pulls of the same digest watch the same download and its progress.
// Each watcher may leave (client disconnect); the download is cancelled only when the last watcher has left, and its
// partial file stays for a later resume.
import { EventEmitter } from "node:events";

export interface DownloadProgress {
  completed: number;
  total: number;
}

export interface DownloadTask {
  /** Aborted when every watcher has left. */
  signal: AbortSignal;
  progress(p: DownloadProgress): void;
}

interface Entry {
  promise: Promise<void>;
  events: EventEmitter;
  abort: AbortController;
  watchers: number;
  last: DownloadProgress | null;
}

export interface Watcher {
  signal?: AbortSignal | undefined;
  onProgress?: ((p: DownloadProgress) => void) | undefined;
}

export class SharedDownloads {
  private readonly active = new Map<string, Entry>();

  /** Keys of downloads in flight (for tests and diagnostics). */
  keys(): string[] {
    return [...this.active.keys()];
  }

  /**
   * Joins the download of `key`, starting it with `start` when none is in flight. Resolves when the download
   * finished; rejects with its error, or with the watcher's abort reason when this watcher leaves early.
   */
  join(key: string, start: (task: DownloadTask) => Promise<void>, watcher: Watcher = {}): Promise<void> {
    if (watcher.signal?.aborted) return Promise.reject(watcher.signal.reason);
    let entry = this.active.get(key);
    if (!entry) {
      const abort = new AbortController();
      const events = new EventEmitter();
      const created: Entry = { promise: Promise.resolve(), events, abort, watchers: 0, last: null };
      created.promise = (async () => {
        try {
          await start({
            signal: abort.signal,
            progress: (p) => {
              created.last = p;
              events.emit("progress", p);
            },
          });
        } finally {
          this.active.delete(key);
        }
      })();
      created.promise.catch(() => {}); // watchers observe the rejection; an unwatched one is not unhandled
      this.active.set(key, created);
      entry = created;
    }
    const e = entry;
    e.watchers++;
    const onProgress = (p: DownloadProgress) => watcher.onProgress?.(p);
    e.events.on("progress", onProgress);
    if (e.last) onProgress(e.last);
    return new Promise<void>((resolve, reject) => {
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        e.events.off("progress", onProgress);
        watcher.signal?.removeEventListener("abort", onAbort);
        e.watchers--;
      };
      const onAbort = () => {
        leave();
        if (e.watchers === 0) e.abort.abort(watcher.signal!.reason);
        reject(watcher.signal!.reason);
      };
      watcher.signal?.addEventListener("abort", onAbort, { once: true });
      e.promise.then(
        () => {
          if (!left) {
            leave();
            resolve();
          }
        },
        (err: unknown) => {
          if (!left) {
            leave();
            reject(err);
          }
        },
      );
    });
  }
}
