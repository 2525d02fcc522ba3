// The slot loop's decode steps and the KV-cache edits between them (slot-loop.ts is the public face). Each step
// carries every generating slot and whole prompts shortest first (step-fill.ts plans it and says when it starts, so
// every step is full); a step of prompts alone goes on with further calls for the prompts left, so a burst larger than
// the batch is one step. Each call is step-call.ts's. With the step pipeline (step-pipeline.ts), the tokens a step
// sampled that may continue are queued at once and the next step's decode starts before they are handed over. Edits
// of the KV cache wait for the step in flight: the native memory must not change under a running decode.
import type { Token } from "node-llama-cpp";
import type { DecodeTurns } from "./decode-turns.ts";
import type { NativeContext } from "./native/port.ts";
import type { SampleBatch } from "./sample-batch.ts";
import type { Slot } from "./slot-states.ts";
import {
  StepCalls,
  tokensOf,
  type InlineDecodePolicy,
  type Plan,
  type Queued,
  type SampleFn,
  type Sampled,
  type StepCounts,
} from "./step-call.ts";
import type { StepFill } from "./step-fill.ts";
import { Continuations, DROPPED, type ContinueFn } from "./step-pipeline.ts";

/** Most tokens one step decodes (in calls of at most the batch size): llama-server's default batch (n_batch). */
const MAX_STEP_TOKENS = 2048;

const slotIdOf = (item: Queued): number => item.slot.id;

export interface StepRunnerOptions {
  fill: StepFill;
  turns: DecodeTurns;
  sampling: SampleBatch;
  /** Decode small steps on the JS thread (SlotLoopOptions.inline, already checked against the native context). */
  inline: InlineDecodePolicy | undefined;
  /** Pipeline the steps (every step decodes on a worker then). */
  pipeline: boolean;
  /** A step started with continuations, or a continuation dropped (its stream ended without it). */
  onPipeline: ((event: "step" | "dropped") => void) | undefined;
}

export class StepRunner {
  private readonly fill: StepFill;
  private readonly batchSize: number;
  private readonly turns: DecodeTurns;
  private readonly calls: StepCalls;
  readonly counts: StepCounts = { inline: 0, worker: 0, pipelined: 0 };
  private queue: Queued[] = [];
  private stepping = false;
  private scheduled = false;
  /** KV-cache edits waiting for the step in flight: the native memory must not change under a running decode. */
  private between: Array<() => void | Promise<void>> = [];
  /** The edits running now, if any. */
  private editing: Promise<void> | undefined;
  /** Settles when the step running now ends (with the pipeline, a decode may run after every request left). */
  private stepEnd: Promise<void> | undefined;
  /** The step pipeline, when on: the continuations waiting for their generation loops. */
  private readonly pipeline: Continuations<Queued> | undefined;
  private readonly onPipeline: StepRunnerOptions["onPipeline"];

  constructor(native: NativeContext, o: StepRunnerOptions) {
    this.fill = o.fill;
    this.batchSize = native.batchSize;
    this.turns = o.turns;
    this.pipeline = o.pipeline ? new Continuations<Queued>(() => this.fill.afterDecode()) : undefined;
    this.onPipeline = o.onPipeline;
    this.calls = new StepCalls(native, {
      sampling: o.sampling,
      inline: o.inline,
      counts: this.counts,
      unqueue: (keep) => (this.queue = this.queue.filter(keep)),
    });
  }

  get inlineDecode(): boolean {
    return this.calls.inlineDecode;
  }

  get pipelined(): boolean {
    return this.pipeline !== undefined;
  }

  /** Queues work for the next step that takes it. */
  queueWork(item: Queued): void {
    this.queue.push(item);
    this.schedule();
  }

  /**
   * `slot`'s continuation, when `tokens` is its token: its item takes the loop's `sample` and `continues`, and its
   * result is returned; undefined when the slot has none (step-pipeline.ts Continuations.take).
   */
  take(slot: Slot, tokens: readonly Token[], sample: SampleFn, continues?: ContinueFn): Promise<Token> | undefined {
    return this.pipeline?.take(slot, tokens, (item) => {
      item.sample = sample;
      item.continues = continues;
      item.took = true;
    });
  }

  /** Drops `slot`'s continuation, if any: one still queued goes unqueued, one decoding is never sampled. */
  drop(slot: Slot): void {
    const dropped = this.pipeline?.drop(slot);
    if (!dropped) return;
    dropped.took = false;
    this.onPipeline?.("dropped");
    if (dropped.tokens.length > 0) {
      this.queue = this.queue.filter((q) => q !== dropped);
      dropped.reject(DROPPED);
    }
  }

  /** SlotLoop.gate. */
  gate(slot?: Slot): Promise<void> | undefined {
    if (this.pipeline && (this.stepping || (slot && this.pipeline.has(slot)))) return undefined;
    return this.fill.gate();
  }

  /** Runs `edit` when no step is in flight, before the next step; edits run one at a time, in the order queued. */
  betweenSteps<T = void>(edit: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.between.push(async () => {
        try {
          resolve(await edit());
        } catch (err) {
          reject(err);
        }
      });
      if (!this.stepping) this.runEdits();
    });
  }

  /** Resolves when no edit and no step is running. */
  async drained(): Promise<void> {
    for (let busy = this.editing ?? this.stepEnd; busy; busy = this.editing ?? this.stepEnd) await busy;
  }

  /** Runs the queued edits (steps wait meanwhile), then schedules the next step. */
  private runEdits(): void {
    this.stepping = true;
    this.editing = (async () => {
      while (this.between.length > 0) await this.between.shift()!();
      this.editing = undefined;
      this.stepping = false;
      this.schedule();
    })();
  }

  private schedule(): void {
    if (this.stepping || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    this.fill.whenFull(() => {
      // A step that may block the JS thread starts on a later macrotask: the consumers write out the text of the last
      // step first, and the event loop polls for I/O between any two steps.
      if (this.calls.inlineDecode) setImmediate(() => this.startStep());
      else this.startStep();
    });
  }

  private startStep(): void {
    this.scheduled = false;
    void this.step();
  }

  private async step(): Promise<void> {
    if (this.stepping || this.queue.length === 0) return;
    this.stepping = true;
    let ended!: () => void;
    this.stepEnd = new Promise((resolve) => (ended = resolve));
    const turn = this.turns.take();
    if (turn) await turn;
    try {
      // One step: a decode call of what StepFill plans, and, when that call carried no generating slot, further calls
      // for the prompts left over. A generation step takes no more promise hops than its one call. With the pipeline,
      // a step whose continuations start the next one at once goes on with that one.
      let plan = this.fill.planStep(this.queue, this.batchSize, slotIdOf);
      let call = this.calls.call(plan);
      for (;;) {
        const sampled = await call;
        if (!sampled) break;
        const stepTokens = tokensOf(plan);
        const more = this.nextCall(stepTokens);
        if (more.length > 0) {
          this.calls.settle(sampled);
          await this.continueStep(stepTokens, more);
          break;
        }
        const next = this.continueOrSettle(sampled);
        if (!next) break;
        ({ plan, call } = next);
      }
    } finally {
      this.turns.give();
      this.stepEnd = undefined;
      ended();
    }
    this.endStep();
  }

  /**
   * The further calls of a step of prompts after its first `stepTokens`; the finished prompts' first tokens go out
   * before each.
   */
  private async continueStep(stepTokens: number, more: Plan): Promise<void> {
    for (let plan = more; plan.length > 0; plan = this.nextCall(stepTokens)) {
      // The next call may block the JS thread (inline decode).
      await new Promise((r) => setImmediate(r));
      const sampled = await this.calls.call(plan);
      if (!sampled) return;
      this.calls.settle(sampled);
      stepTokens += tokensOf(plan);
    }
  }

  /** The step's next call after `stepTokens` tokens (none: the step ends), as StepFill.planContinuation plans it. */
  private nextCall(stepTokens: number): Plan {
    return this.fill.planContinuation(this.queue, this.batchSize, stepTokens, MAX_STEP_TOKENS, slotIdOf);
  }

  /**
   * With the pipeline: the sampled tokens that may continue are queued at once (continuations), and when that makes
   * the next step full (StepFill.full: every other active sequence has queued), the next step's decode starts before
   * the sampled tokens are handed over, so the generation loops' work for them overlaps it. Never with KV-cache edits
   * waiting (they run between steps), a draft verified (its rejected tokens leave the KV cache first) or another
   * context waiting for its decode turn. Settles the sampled items in every case; returns the next step if it started.
   */
  private continueOrSettle(sampled: Sampled[]): { plan: Plan; call: Promise<Sampled[] | undefined> } | undefined {
    const pipeline = this.pipeline;
    if (!pipeline || this.between.length > 0 || this.turns.contended || sampled.some((s) => s.item.verify)) {
      this.calls.settle(sampled);
      return undefined;
    }
    let continued = 0;
    for (const { item, result } of sampled) {
      const token = result.status === "fulfilled" ? result.value : DROPPED;
      if (typeof token !== "number" || token < 0 || !item.continues?.(token as Token)) continue;
      this.fill.beforeDecode();
      this.queue.push(pipeline.add(item.slot, token as Token, (parts) => ({ ...parts, sample: item.sample })));
      continued++;
    }
    let next: { plan: Plan; call: Promise<Sampled[] | undefined> } | undefined;
    if (continued > 0 && this.fill.full(sampled.length)) {
      this.counts.pipelined++;
      this.onPipeline?.("step");
      const plan = this.fill.planStep(this.queue, this.batchSize, slotIdOf);
      next = { plan, call: this.calls.call(plan) };
    }
    this.calls.settle(sampled);
    return next;
  }

  private endStep(): void {
    if (this.between.length > 0) this.runEdits();
    else {
      this.stepping = false;
      this.schedule();
    }
  }
}
