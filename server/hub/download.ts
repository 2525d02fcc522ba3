// Resumable, verified downloads of one file into a partial file.
//
// - The partial file and its sidecar (sidecar.ts) survive interruptions: a new attempt, or a new process, resumes each
//   part with `Range: bytes=<n>-<end>`; a 206 must carry the matching Content-Range, a 200 to a single-part resume
//   means the server ignored the range and the part starts over.
// - A connection that delivers no bytes for `stallMs` is aborted and retried with exponential backoff; attempts are
//   bounded per part and counted only while no progress is made. Reported progress never goes backwards.
// - Files above `parallelThreshold` are fetched as several ranges at once, each written at its offset (pwrite).
// - The sha256 is computed on a worker thread that follows the contiguous written prefix (file-hasher.ts), so it
//   overlaps the download; a mismatch deletes the partial data and its sidecar. Callers move the file into place only
//   after this returns, so nothing unverified ever appears under a final name.
import fs from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { AppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import { silentLogger } from "../common/logger.ts";
import { BatchWriter } from "./batch-writer.ts";
import { isRetryableStatus } from "./client.ts";
import { FileHasher } from "./file-hasher.ts";
import { httpGet, type HttpGetResponse } from "./http-get.ts";
import { completedBytes, planParts, readSidecar, writeSidecar, type Part, type Sidecar } from "./sidecar.ts";

export interface DownloadTuning {
  /** No bytes for this long aborts the connection and retries (default 30 s). */
  stallMs: number;
  /** Consecutive failed attempts of a part, without progress, before giving up (default 6). */
  maxAttempts: number;
  /** First retry delay, doubled per failure up to 10 s (default 500 ms). */
  backoffMs: number;
  /** Files larger than this are fetched in parallel parts (default 64 MiB). */
  parallelThreshold: number;
  /** Parts of a parallel download (default 4). */
  maxParts: number;
}

export const DEFAULT_TUNING: DownloadTuning = {
  stallMs: 30_000,
  maxAttempts: 6,
  backoffMs: 500,
  parallelThreshold: 64 << 20,
  maxParts: 4,
};

export interface DownloadRequest {
  url: string;
  headers?: Record<string, string>;
  /** Expected sha256, 64 lower-case hex digits. */
  sha256: string;
  /** Expected size in bytes. */
  size: number;
  /** Where the data is written; its sidecar is `${partialPath}.json`. */
  partialPath: string;
  /** File name for messages. */
  label: string;
  /** Error for a non-retryable HTTP status (401, 403, 404…). */
  statusError: (status: number) => AppError;
  tuning?: Partial<DownloadTuning>;
  signal?: AbortSignal;
  onProgress?: (completed: number, total: number) => void;
  logger?: Logger;
}

export const sidecarPath = (partialPath: string): string => `${partialPath}.json`;

class RetryableError extends Error {}
/** The server answered a ranged request with the whole file: parallel parts are impossible, start over as one. */
class RangeIgnoredError extends Error {}

const STALLED = "stalled";
const LOCAL_FS_ERRORS = new Set(["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO", "EBADF", "EFBIG"]);

/** Downloads and verifies; on return the partial file holds exactly the expected content. */
export async function downloadVerified(req: DownloadRequest): Promise<void> {
  const tuning = { ...DEFAULT_TUNING, ...req.tuning };
  const log = req.logger ?? silentLogger;
  const sidecarFile = sidecarPath(req.partialPath);
  const digest = `sha256:${req.sha256}`;
  const saved = await readSidecar(sidecarFile, { digest, total: req.size });
  const fresh = (parts: number): Sidecar => ({
    version: 1,
    url: req.url,
    digest,
    total: req.size,
    parts: planParts(req.size, parts),
  });
  const wantedParts = req.size > tuning.parallelThreshold ? tuning.maxParts : 1;
  const partialExists = await fs.stat(req.partialPath).then(
    () => true,
    () => false,
  );
  let state = saved && partialExists ? saved : fresh(wantedParts);
  if (state === saved && completedBytes(state.parts) > 0)
    log.info({ file: req.label, completed: completedBytes(state.parts), total: req.size }, "resuming partial download");

  let reported = 0;
  const report = () => {
    const completed = completedBytes(state.parts);
    if (completed > reported) reported = completed;
    req.onProgress?.(reported, req.size);
  };
  report();

  for (;;) {
    const file = await fs.open(req.partialPath, completedBytes(state.parts) > 0 ? "r+" : "w+");
    const run = new Download(req, tuning, state, file, log, report);
    try {
      const actual = await run.all();
      if (actual !== req.sha256) {
        await run.stop();
        await fs.rm(req.partialPath, { force: true });
        await fs.rm(sidecarFile, { force: true });
        throw new AppError(
          "STORE_DIGEST_MISMATCH",
          `sha256 mismatch for ${req.label}: the hub lists sha256:${req.sha256}, the downloaded data is sha256:${actual}; the partial download was deleted, pull again`,
        );
      }
      return;
    } catch (e) {
      if (!(e instanceof RangeIgnoredError)) throw e;
      log.warn({ file: req.label }, "server ignores Range requests; downloading as one part");
      state = fresh(1);
    } finally {
      await run.stop();
      await file.close();
    }
  }
}

/** Bytes written contiguously from the start of the file. */
function writtenPrefix(parts: readonly Part[]): number {
  let prefix = 0;
  for (const p of parts) {
    prefix += p.done;
    if (p.done < p.end - p.start) break;
  }
  return prefix;
}

/** One run over the parts of a download. */
class Download {
  private readonly req: DownloadRequest;
  private readonly tuning: DownloadTuning;
  private readonly state: Sidecar;
  private readonly file: fs.FileHandle;
  private readonly log: Logger;
  private readonly report: () => void;
  /** Aborts every part when one fails for good (or the caller aborts). */
  private readonly stopAll = new AbortController();
  private dirty = false;
  private saver: NodeJS.Timeout | undefined;
  /** Sidecar writes, one after another. */
  private saving: Promise<void> = Promise.resolve();
  /** Hashes the written prefix of the file on a worker thread while the download runs. */
  private hasher: FileHasher | null = null;

  constructor(
    req: DownloadRequest,
    tuning: DownloadTuning,
    state: Sidecar,
    file: fs.FileHandle,
    log: Logger,
    report: () => void,
  ) {
    this.req = req;
    this.tuning = tuning;
    this.state = state;
    this.file = file;
    this.log = log;
    this.report = report;
  }

  /** Runs every unfinished part; resolves with the sha256 of the finished file. */
  async all(): Promise<string> {
    const onAbort = () => this.stopAll.abort(this.req.signal!.reason);
    this.req.signal?.addEventListener("abort", onAbort, { once: true });
    if (this.req.signal?.aborted) onAbort();
    await writeSidecar(sidecarPath(this.req.partialPath), this.state);
    this.saver = setInterval(() => void this.save(), 500);
    this.hasher = new FileHasher(this.req.partialPath);
    this.hasher.advance(writtenPrefix(this.state.parts));
    try {
      const pending = this.state.parts.filter((p) => p.done < p.end - p.start).map((p, i) => this.runPart(p, i));
      const results = await Promise.allSettled(pending);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) throw this.req.signal?.aborted ? this.req.signal.reason : failed.reason;
      const hasher = this.hasher;
      this.hasher = null;
      return await hasher.finish(this.state.total);
    } finally {
      this.req.signal?.removeEventListener("abort", onAbort);
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.saver);
    await this.hasher?.cancel();
    this.hasher = null;
    await this.save();
  }

  private save(): Promise<void> {
    this.saving = this.saving.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      await writeSidecar(sidecarPath(this.req.partialPath), this.state).catch((e: unknown) =>
        this.log.warn({ err: e }, "cannot write download sidecar"),
      );
    });
    return this.saving;
  }

  private async runPart(part: Part, index: number): Promise<void> {
    let failures = 0;
    while (part.done < part.end - part.start) {
      const before = part.done;
      try {
        await this.fetchInto(part);
        if (part.done < part.end - part.start)
          throw new RetryableError("connection closed before the part was complete");
      } catch (e) {
        const aborted = this.stopAll.signal.aborted;
        if (aborted || !(e instanceof RetryableError)) {
          if (!aborted) this.stopAll.abort(e);
          throw e;
        }
        failures = part.done > before ? 1 : failures + 1;
        if (failures >= this.tuning.maxAttempts) {
          const err = new AppError(
            "UPSTREAM_FAILED",
            `download of ${this.req.label} failed after ${failures} attempts without progress: ${e.message}`,
          );
          this.stopAll.abort(err);
          throw err;
        }
        const delay = Math.min(10_000, this.tuning.backoffMs * 2 ** (failures - 1));
        this.log.warn(
          { file: this.req.label, part: index, completed: part.done, reason: e.message, retryInMs: delay },
          "download part interrupted; retrying",
        );
        await sleep(delay, undefined, { signal: this.stopAll.signal }).catch(() => {});
      }
    }
  }

  /** One HTTP request for the rest of a part; writes what arrives, returns when the body ends. */
  private async fetchInto(part: Part): Promise<void> {
    const single = this.state.parts.length === 1;
    const from = part.start + part.done;
    const headers: Record<string, string> = { ...this.req.headers };
    const ranged = !(single && from === 0);
    if (ranged) headers.Range = `bytes=${from}-${part.end - 1}`;
    const conn = new AbortController();
    const cancel = () => conn.abort(this.stopAll.signal.reason);
    this.stopAll.signal.addEventListener("abort", cancel, { once: true });
    let timer = setTimeout(() => conn.abort(STALLED), this.tuning.stallMs);
    // Re-arming a timer per 64 KiB chunk is measurable at 1 GB/s: note the time, check it when the timer fires.
    let lastData = Date.now();
    const arm = () => {
      timer = setTimeout(
        () => (Date.now() - lastData >= this.tuning.stallMs ? conn.abort(STALLED) : arm()),
        Math.max(1, lastData + this.tuning.stallMs - Date.now()),
      );
    };
    try {
      let res: HttpGetResponse;
      try {
        res = await httpGet(this.req.url, headers, conn.signal);
      } catch (e) {
        throw this.classify(e, conn.signal);
      }
      clearTimeout(timer);
      lastData = Date.now();
      arm();
      let pos = from;
      if (res.status === 200 && ranged) {
        if (!single) {
          res.body.destroy();
          throw new RangeIgnoredError();
        }
        part.done = 0; // the server sent the whole file: start over
        pos = 0;
        this.dirty = true;
        await this.hasher?.cancel();
        this.hasher = new FileHasher(this.req.partialPath);
      } else if (res.status === 206) {
        const range = res.header("content-range") ?? "";
        const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(range);
        if (!m || Number(m[1]) !== from || (m[3] !== "*" && Number(m[3]) !== this.state.total)) {
          res.body.destroy();
          throw new AppError(
            "UPSTREAM_FAILED",
            `the hub answered a range request for ${this.req.label} with Content-Range "${range}" (wanted bytes ${from}-${part.end - 1}/${this.state.total})`,
          );
        }
      } else if (res.status !== 200) {
        res.body.destroy();
        if (isRetryableStatus(res.status)) throw new RetryableError(`HTTP ${res.status}`);
        throw this.req.statusError(res.status);
      }
      const etag = res.header("x-linked-etag") ?? res.header("etag");
      if (etag && !this.state.etag) this.state.etag = etag;
      const end = part.end;
      const writer = new BatchWriter(this.file, pos, (written) => {
        part.done = written - part.start;
        this.dirty = true;
        this.hasher?.advance(writtenPrefix(this.state.parts));
        this.report();
      });
      try {
        // Flowing mode, paused only while the writer is two batches behind: for-await pauses the socket per chunk.
        await new Promise<void>((resolve, reject) => {
          const body = res.body;
          body.on("data", (chunk: Buffer) => {
            lastData = Date.now();
            const n = Math.min(chunk.length, end - pos);
            if (n <= 0) return;
            pos += n;
            const wait = writer.push(n === chunk.length ? chunk : chunk.subarray(0, n));
            if (wait) {
              body.pause();
              wait.then(
                () => body.resume(),
                (e: unknown) => body.destroy(e as Error),
              );
            }
          });
          body.once("end", resolve);
          body.once("error", reject);
          body.once("close", () => (body.complete ? resolve() : reject(new Error("connection closed mid-body"))));
        });
        await writer.flush();
      } catch (e) {
        // Keep what arrived: it is written before the error is reported, so a resume starts after it.
        await writer.flush().catch(() => {});
        throw this.classify(e, conn.signal);
      } finally {
        res.body.destroy();
      }
    } finally {
      clearTimeout(timer);
      this.stopAll.signal.removeEventListener("abort", cancel);
    }
  }

  private classify(e: unknown, conn: AbortSignal): unknown {
    if (this.stopAll.signal.aborted) return this.stopAll.signal.reason;
    if (conn.aborted && conn.reason === STALLED)
      return new RetryableError(`no data for ${this.tuning.stallMs} ms (stalled)`);
    if (e instanceof AppError) return e;
    const err = e as Error & { code?: string; cause?: { code?: string; message?: string } };
    // A full or read-only disk does not heal by retrying: fail at once (the partial file stays for a later resume).
    if (err.code && LOCAL_FS_ERRORS.has(err.code))
      return new AppError("INTERNAL", `cannot write ${this.req.partialPath}: ${err.message}`, { cause: e });
    return new RetryableError(err.cause?.code ?? err.cause?.message ?? err.message);
  }
}
