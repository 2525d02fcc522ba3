// Where a model's accelerator time goes, always on (/metrics): the wall time with one of its decode calls in flight,
// and the wall time with none in flight while the model has work (a request holding or waiting for one of its
// sequences): what its GPU waits for, between two decodes and before a request's first. Of the latter, the part spent
// in the rows' sampling calls. The calls are timed where the slot loop makes them (timedContext wraps the native port):
// two performance.now() calls per decode call and per sampling call, and up to four counter increments per decode call.
// A decode on a worker thread (pipelined steps) ends for the JS thread only once that thread takes its result: how
// busy the JS thread was meanwhile (the event loop's utilization, two more reads) says whether it held the result up.
import type { NativeContext } from "./native/port.ts";

/** Seconds to add, reported at each decode call's end, or when the model's work ended (no call then: decode 0). */
export interface DecodeTime {
  /** With the call in flight. */
  decode: number;
  /**
   * Whether the call was a generation step's: one token for each of its sequences (else it carried prompt tokens or a
   * draft), the calls llama-batched-bench's generation phase times.
   */
  generation: boolean;
  /** Of `decode`, for a call on a worker thread: the JS thread busy meanwhile. */
  jsBusy: number;
  /** Before it, with no call in flight while the model had work. */
  idle: number;
  /** Of `idle`, in sampling calls. */
  sampling: number;
}

export type DecodeTimeReport = (time: DecodeTime) => void;

export class DecodeClock {
  private readonly report: DecodeTimeReport;
  private readonly now: () => number;
  private readonly jsActive: () => number;
  private work = false;
  /** The JS thread's active milliseconds so far when the call in flight started on a worker; undefined: inline. */
  private activeAtStart: number | undefined;
  /** When the call in flight started; undefined: none is (a context decodes one call at a time). */
  private callStart: number | undefined;
  /** Since when the model waits (no call in flight, work); undefined: it does not. */
  private idleSince: number | undefined;
  /** Milliseconds of the current wait spent in sampling calls. */
  private samplingMs = 0;
  /** Whether the call in flight is a generation step's. */
  private generation = false;
  /** The wait the call in flight ended, in seconds, reported with the call. */
  private waited: [idle: number, sampling: number] = [0, 0];

  /**
   * `now`: milliseconds (performance.now; a test's own clock); `jsActive`: the JS thread's milliseconds spent outside
   * its event loop's wait so far (the event loop utilization's `active`).
   */
  constructor(
    report: DecodeTimeReport,
    now: () => number = () => performance.now(),
    jsActive: () => number = () => performance.eventLoopUtilization().active,
  ) {
    this.report = report;
    this.now = now;
    this.jsActive = jsActive;
  }

  /** Whether the model has work: a request holds or waits for one of its sequences. */
  setWork(work: boolean): void {
    if (work === this.work) return;
    this.work = work;
    if (this.callStart !== undefined) return;
    if (work) this.idleSince = this.now();
    else {
      const [idle, sampling] = this.endWait(this.now());
      this.report({ decode: 0, generation: false, jsBusy: 0, idle, sampling });
    }
  }

  /**
   * A decode call starts: on a worker thread or inline (blocking the JS thread); `generation`: a generation step's
   * (one token for each sequence).
   */
  started(worker: boolean, generation: boolean): void {
    const now = this.now();
    this.waited = this.endWait(now);
    this.callStart = now;
    this.generation = generation;
    this.activeAtStart = worker ? this.jsActive() : undefined;
  }

  /** The decode call in flight ended (done or failed). */
  ended(): void {
    const now = this.now();
    const decodeMs = this.callStart === undefined ? 0 : now - this.callStart;
    const busyMs = this.activeAtStart === undefined ? 0 : Math.min(decodeMs, this.jsActive() - this.activeAtStart);
    this.callStart = undefined;
    this.activeAtStart = undefined;
    if (this.work) this.idleSince = now;
    const [idle, sampling] = this.waited;
    this.waited = [0, 0];
    this.report({
      decode: decodeMs / 1000,
      generation: this.generation,
      jsBusy: Math.max(0, busyMs) / 1000,
      idle,
      sampling,
    });
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
  // The batch being built: a generation step's has one token per sequence (one addToBatch call each).
  let tokens = 0,
    sequences = 0;
  return {
    ...native,
    initBatch(size) {
      tokens = size;
      sequences = 0;
      native.initBatch(size);
    },
    addToBatch(...args) {
      sequences++;
      return native.addToBatch(...args);
    },
    async decodeBatch() {
      clock.started(true, tokens === sequences);
      try {
        await native.decodeBatch();
      } finally {
        clock.ended();
      }
    },
    ...(inline
      ? {
          decodeBatchInline() {
            clock.started(false, tokens === sequences);
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
