// A recording fake of the native port, for unit tests of the scheduler (slot-loop.ts): it logs every call that touches
// a sequence, records where each decode ran, and can be made slow or failing. No model: every sampled token is
// `sampledToken`. The real port is tested against the real addon in test/integration/engine.
import type { NativeContext, NativeSampler, RowLogits, SamplerConfig } from "./port.ts";

export class RecordingSampler implements NativeSampler {
  readonly configs: SamplerConfig[] = [];
  disposed = false;

  applyConfig(config: SamplerConfig): void {
    this.configs.push({ ...config });
  }

  dispose(): void {
    this.disposed = true;
  }
}

interface FakeOptions {
  inline?: boolean;
  batchSize?: number;
  threadpool?: boolean;
  states?: boolean;
  batchSampling?: boolean;
}

export class RecordingNativeContext implements NativeContext {
  readonly batchSize: number;
  readonly threadpoolThreads = 0;
  readonly inlineSampling = false;
  /** Each decode: where it ran and how many tokens it carried. */
  readonly calls: Array<{ mode: "inline" | "worker"; tokens: number }> = [];
  /** Every call that touches a sequence, in order ("add 1@4+1", "decoded", "copy 3→1", "remove 2[2,4)", "dispose 1") */
  readonly log: string[] = [];
  readonly samplers: RecordingSampler[] = [];
  /** What sampleToken returns. */
  sampledToken = 7;
  failCopy = false;
  /** How long an inline decode keeps the thread busy. */
  inlineMs = 0;
  failInline = false;
  /** With `states`: a saved state names the sequence it came from ("state of 2"). */
  readonly saveSequence: ((seq: number) => Uint8Array) | undefined;
  readonly restoreSequence: ((seq: number, state: Uint8Array) => boolean) | undefined;
  /** A state restoreSequence refuses ("state of 2"). */
  badState: string | undefined;
  /** Absent with `inline` false, as in the prebuilt addon. */
  readonly decodeBatchInline: (() => void) | undefined;
  /** With `threadpool`: logs "pause", or "pause during a decode" when a worker decode is in flight (a bug). */
  readonly pauseThreadpool: (() => boolean) | undefined;
  /** With `batchSampling`: logs "sample rows 0,1" and returns sampledToken per row (failing the rows in failRows). */
  readonly sampleTokens: ((rows: Uint32Array, samplers: readonly NativeSampler[]) => Array<number | Error>) | undefined;
  readonly failRows = new Set<number>();
  private decodeStarted: (() => void) | undefined;
  private batch = 0;
  private decoding = 0;

  constructor(opts: FakeOptions = {}) {
    this.batchSize = opts.batchSize ?? 512;
    this.saveSequence = opts.states ? (seq) => this.saveState(seq) : undefined;
    this.restoreSequence = opts.states ? (seq, state) => this.restoreState(seq, state) : undefined;
    this.decodeBatchInline = (opts.inline ?? true) ? () => this.decodeInline() : undefined;
    this.pauseThreadpool = opts.threadpool
      ? () => {
          this.log.push(this.decoding > 0 ? "pause during a decode" : "pause");
          return true;
        }
      : undefined;
    this.sampleTokens = opts.batchSampling ? (rows) => this.sampleRows(rows) : undefined;
  }

  initBatch(size: number): void {
    this.batch = size;
  }

  addToBatch(seq: number, first: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array {
    this.log.push(`add ${seq}@${first}+${tokens.length}`);
    return Uint32Array.from(logitIndexes);
  }

  /** Resolves when the next worker decode starts. */
  nextDecode(): Promise<void> {
    return new Promise((resolve) => {
      this.decodeStarted = resolve;
    });
  }

  decodeBatch(): Promise<void> {
    this.calls.push({ mode: "worker", tokens: this.batch });
    this.decodeStarted?.();
    this.decoding++;
    return new Promise((resolve) =>
      setImmediate(() => {
        this.decoding--;
        this.log.push("decoded");
        resolve();
      }),
    );
  }

  private decodeInline(): void {
    this.calls.push({ mode: "inline", tokens: this.batch });
    if (this.failInline) throw new Error("Eval has failed");
    const until = performance.now() + this.inlineMs;
    while (performance.now() < until) {
      /* a slow decode */
    }
  }

  sampleToken(row: number): Promise<number> {
    this.log.push(`sample row ${row}`);
    return Promise.resolve(this.sampledToken);
  }

  private sampleRows(rows: Uint32Array): Array<number | Error> {
    this.log.push(`sample rows ${rows.join(",")}`);
    return Array.from(rows, (row) => (this.failRows.has(row) ? new Error(`row ${row} failed`) : this.sampledToken));
  }

  tokenLogits(_row: number, _sampler: NativeSampler, tokens: number[]): Promise<RowLogits> {
    return Promise.resolve({ pairs: tokens.flatMap((t) => [t, 0]), logSumExp: 0 });
  }

  createSampler(): NativeSampler {
    const s = new RecordingSampler();
    this.samplers.push(s);
    return s;
  }

  disposeSequence(seq: number): void {
    this.log.push(`dispose ${seq}`);
  }

  copySequence(target: number, source: number): Promise<void> {
    this.log.push(`copy ${source}→${target}`);
    return new Promise((resolve, reject) =>
      setImmediate(() => (this.failCopy ? reject(new Error("copy failed")) : resolve())),
    );
  }

  removeTokens(seq: number, start: number, end: number): boolean {
    this.log.push(`remove ${seq}[${start},${end})`);
    return true;
  }

  private saveState(seq: number): Uint8Array {
    this.log.push(`save ${seq}`);
    return new TextEncoder().encode(`state of ${seq}`);
  }

  private restoreState(seq: number, state: Uint8Array): boolean {
    const text = new TextDecoder().decode(state);
    this.log.push(`restore ${seq} ← ${text}`);
    return text !== this.badState;
  }

  shiftTokens(seq: number, start: number, end: number, delta: number): void {
    this.log.push(`shift ${seq}[${start},${end}) by ${delta}`);
  }
}
