// Where a model's accelerator time goes, always on (/metrics): the wall time with one of its decode calls in flight,
// and the wall time with none in flight while the model has work (a request holding or waiting for one of its
// sequences): what its GPU waits for, between two decodes and before a request's first. Of the latter, the part spent
// in the rows' sampling calls. The calls are timed where the slot loop makes them (timedContext wraps the native port):
// two performance.now() calls per decode call and per sampling call, and three counter increments per decode call.
import type { NativeContext } from "./native/port.ts";

/**
 * Seconds to add: with a decode call in flight; with none in flight while the model had work (reported with the call
 * that ended the wait, or when the work ended), and of those, the seconds in sampling calls.
 */
export type DecodeTimeReport = (decodeSeconds: number, idleSeconds: number, samplingSeconds: number) => void;

export class DecodeClock {
  private readonly report: DecodeTimeReport;
  private readonly now: () => number;
  private work = false;
  /** When the call in flight started; undefined: none is (a context decodes one call at a time). */
  private callStart: number | undefined;
  /** Since when the model waits (no call in flight, work); undefined: it does not. */
  private idleSince: number | undefined;
  /** Milliseconds of the current wait spent in sampling calls. */
  private samplingMs = 0;
  /** The wait the call in flight ended, in seconds, reported with the call. */
  private waited: [idle: number, sampling: number] = [0, 0];

  /** `now`: milliseconds (performance.now; a test's own clock). */
  constructor(report: DecodeTimeReport, now: () => number = () => performance.now()) {
    this.report = report;
    this.now = now;
  }

  /** Whether the model has work: a request holds or waits for one of its sequences. */
  setWork(work: boolean): void {
    if (work === this.work) return;
    this.work = work;
    if (this.callStart !== undefined) return;
    if (work) this.idleSince = this.now();
    else this.report(0, ...this.endWait(this.now()));
  }

  /** A decode call starts. */
  started(): void {
    const now = this.now();
    this.waited = this.endWait(now);
    this.callStart = now;
  }

  /** The decode call in flight ended (done or failed). */
  ended(): void {
    const now = this.now();
    const decodeMs = this.callStart === undefined ? 0 : now - this.callStart;
    this.callStart = undefined;
    if (this.work) this.idleSince = now;
    this.report(decodeMs / 1000, ...this.waited);
    this.waited = [0, 0];
  }

  /** Runs a sampling call, its time counted as the wait's sampling part while the model waits. */
  sampling<T>(call: () => T): T {
    const since = this.now();
    try {
      return call();
    } finally {
      if (this.idleSince !== undefined) this.samplingMs += this.now() - since;
    }
  }

  /** Ends the current wait (if any) at `now`: its seconds, and those of its sampling calls. */
  private endWait(now: number): [idle: number, sampling: number] {
    const since = this.idleSince;
    const sampling = this.samplingMs;
    this.idleSince = undefined;
    this.samplingMs = 0;
    if (since === undefined) return [0, 0];
    const idleMs = Math.max(0, now - since);
    return [idleMs / 1000, Math.min(sampling, idleMs) / 1000];
  }
}

/**
 * `native` with its decode and sampling calls timed by `clock` (the port's implementation, nativeContextOf, is a plain
 * object of closures: its other members are copied as they are).
 */
export function timedContext(native: NativeContext, clock: DecodeClock): NativeContext {
  const { decodeBatchInline: inline, sampleTokens: sampleRows } = native;
  return {
    ...native,
    async decodeBatch() {
      clock.started();
      try {
        await native.decodeBatch();
      } finally {
        clock.ended();
      }
    },
    ...(inline
      ? {
          decodeBatchInline() {
            clock.started();
            try {
              inline.call(native);
            } finally {
              clock.ended();
            }
          },
        }
      : {}),
    // The patched addon samples on the calling thread, so the call's time is the sampling's; the prebuilt addon's
    // sampling runs on a worker after the call returns and shows in the rest of the wait.
    sampleToken: (batchLogitIndex, sampler) => clock.sampling(() => native.sampleToken(batchLogitIndex, sampler)),
    ...(sampleRows
      ? { sampleTokens: (rows, samplers) => clock.sampling(() => sampleRows.call(native, rows, samplers)) }
      : {}),
  };
}
