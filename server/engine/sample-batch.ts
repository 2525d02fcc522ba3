// A decode step's sampling calls made as one. While the slot loop hands a step's finished rows to their sample
// functions (SampleFn, VerifyFn), the plain sampling calls those make (TokenSampler.sample through
// SlotLoop.sampleToken) are queued instead of made; the step then samples every queued row in one native call
// (NativeContext.sampleTokens), which spreads the rows over the context's threadpool: at 32 streams on a 128k
// vocabulary, sampling one row after another on the JS thread was most of a step's host time (docs/decisions/0021).
// Each row keeps its own sampler, so the tokens are those of one call per row. A call made at any other time (a
// draft's later rows, sampled after the first one's token is known) is a call of its own.
import type { NativeContext, NativeSampler } from "./native/port.ts";

interface QueuedRow {
  batchLogitIndex: number;
  sampler: NativeSampler;
  resolve(token: number): void;
  reject(err: unknown): void;
}

export class SampleBatch {
  private readonly native: NativeContext;
  /** The rows queued by the dispatch running now (undefined: none is). */
  private queued: QueuedRow[] | undefined;

  constructor(native: NativeContext) {
    this.native = native;
  }

  /** NativeContext.sampleToken; queued for the step's one call while `collect` dispatches. */
  readonly sampleToken = (batchLogitIndex: number, sampler: NativeSampler): Promise<number> => {
    const queued = this.queued;
    if (!queued) return this.native.sampleToken(batchLogitIndex, sampler);
    return new Promise((resolve, reject) => queued.push({ batchLogitIndex, sampler, resolve, reject }));
  };

  /**
   * Runs `dispatch` (which hands a step's rows to their sample functions) with sampleToken calls queued, then samples
   * the queued rows in one native call and settles their promises. Without the native call (the prebuilt addon), or
   * inside another dispatch, `dispatch` runs as it is.
   */
  collect<T>(dispatch: () => T): T {
    if (!this.native.sampleTokens || this.queued) return dispatch();
    const rows: QueuedRow[] = [];
    this.queued = rows;
    try {
      return dispatch();
    } finally {
      this.queued = undefined;
      this.sampleRows(rows);
    }
  }

  private sampleRows(rows: QueuedRow[]): void {
    if (rows.length === 0) return;
    let results: Array<number | Error>;
    try {
      results = this.native.sampleTokens!(
        Uint32Array.from(rows, (r) => r.batchLogitIndex),
        rows.map((r) => r.sampler),
      );
    } catch (err) {
      for (const r of rows) r.reject(err);
      return;
    }
    rows.forEach((r, i) => {
      const result = results[i]!;
      if (result instanceof Error) r.reject(result);
      else r.resolve(result);
    });
  }
}
