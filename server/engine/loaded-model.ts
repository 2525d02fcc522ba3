// One loaded model: weights, one context with `parallel` slots scheduled by its slot loop (slot-loop.ts), the chat
// wrapper (resolved once: it is expensive) and the keep-alive bookkeeping.
import { AppError } from "../common/errors.ts";
import {
  resolveChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaEmbeddingContext,
  type LlamaModel,
} from "node-llama-cpp";
import { setLongTimeout, type LongTimeout } from "../common/long-timeout.ts";
import { DecodeClock, timedContext } from "./decode-clock.ts";
import { decodeTurnsFor } from "./decode-turns.ts";
import type { EngineMetricsSink } from "./metrics.ts";
import { nativeContextOf } from "./native/node-llama-cpp.ts";
import { INLINE_DECODE, SlotLoop } from "./slot-loop.ts";
import type { StepPipelineSetting } from "../common/step-pipeline-settings.ts";
import { pipelinesSteps } from "./step-pipeline.ts";
import type { PromptCache } from "./prompt-cache.ts";
import { ImageEncodes } from "./image-encodes.ts";
import { loadProjector, mtmdAvailable, type Projector } from "./native/mtmd.ts";
import type { ModelSpec } from "./types.ts";
import { ggmlTypeName, kvCacheBytes, kvShape, DEFAULT_KV } from "./kv-cache.ts";
import { runnableKvCacheTypes, type FlashAttention, type KvCacheType } from "../common/kv-cache-settings.ts";
import { loadDraftModel, type DraftModel } from "./draft-model.ts";
import { createRanker, type Ranker } from "./ranker.ts";

export interface LoadOptions {
  llama: Llama;
  spec: ModelSpec;
  /** Context length per sequence asked for (num_ctx or the server default); capped by the model's trained context. */
  requestedContextLength: number;
  /** Memory-map the weights from the file (else read them into memory): weights-mapping.ts. */
  mappedWeights: boolean;
  parallel: number;
  maxQueue: number;
  /** The KV cache's element type and flash attention (default f16, auto). */
  kv?: { type: KvCacheType; flashAttention: FlashAttention };
  threads: number;
  metrics: EngineMetricsSink;
  /** The server's RAM prompt cache: this context's entries are dropped when it is disposed. */
  promptCache?: PromptCache | undefined;
  /**
   * Busy slots move into gaps among the busy ids on release (default true); harnesses that hold every slot and release
   * them all at the end turn it off.
   */
  moveSlots?: boolean;
  /** GANTRY_STEP_PIPELINE (step-pipeline.ts); default auto. */
  stepPipeline?: StepPipelineSetting;
}

export class LoadedModel {
  readonly spec: ModelSpec;
  /** Every model name that has used these weights (aliases share one loaded model), the latest one last. */
  readonly names = new Set<string>();
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  /** node-llama-cpp's chat wrapper, for a model without a chat template of its own. */
  readonly chatWrapper: ChatWrapper;
  /** The GGUF's Jinja chat template (tokenizer.chat_template), when it has one. */
  readonly jinjaTemplate: string | undefined;
  readonly slots: SlotLoop;
  readonly contextLength: number;
  /** The KV cache as loaded: element type, flash attention as asked, bytes for all sequences. */
  readonly kvCache: { type: KvCacheType; flashAttention: FlashAttention; bytes: number };
  readonly requestedContextLength: number;
  /** The weights are memory-mapped from the GGUF file (else read into memory). */
  readonly mappedWeights: boolean;
  readonly parallel: number;
  readonly loadDurationNs: number;
  /** Size of the persistent threadpool attached to the context (0 = none: ggml starts threads per decode). */
  readonly threadpoolThreads: number;
  readonly inlineSampling: boolean;
  /** Tokens in the vocabulary (valid ids are 0 to vocabSize - 1). */
  readonly vocabSize: number;
  /** Layers offloaded to the GPU, of the model's total (the output layer counts as one): the processor split. */
  readonly gpuLayers: number;
  readonly totalLayers: number;
  /** A vision model's projector (spec.projector loaded with mtmd): the model takes images. */
  readonly projector: Projector | undefined;
  /** The projector's encodings kept by image id, across sequences and requests. */
  readonly imageEncodes = new ImageEncodes();
  /** The draft model for speculative decoding (spec.draft), loaded beside this one. */
  draft: DraftModel | undefined;
  private readonly threads: number;
  private embeddingContext: Promise<LlamaEmbeddingContext> | undefined;
  private rankingContext: Promise<Ranker> | undefined;
  /** Requests (and loads) holding this model: it is idle, and may be evicted, at 0. */
  users = 0;
  lastUsed = Date.now();
  keepAliveMs: number | null = null;
  expiresAt: number | null = null;
  unloading = false;
  private timer: LongTimeout | undefined;
  /** Drops this context's entries from the RAM prompt cache. */
  private readonly dropCached: () => void;

  private constructor(init: {
    spec: ModelSpec;
    model: LlamaModel;
    context: LlamaContext;
    chatWrapper: ChatWrapper;
    slots: SlotLoop;
    contextLength: number;
    kvCache: LoadedModel["kvCache"];
    requestedContextLength: number;
    mappedWeights: boolean;
    parallel: number;
    threads: number;
    loadDurationNs: number;
    threadpoolThreads: number;
    inlineSampling: boolean;
    projector: Projector | undefined;
    dropCached: () => void;
  }) {
    this.dropCached = init.dropCached;
    this.projector = init.projector;
    this.spec = init.spec;
    this.model = init.model;
    this.context = init.context;
    this.chatWrapper = init.chatWrapper;
    this.jinjaTemplate = init.model.fileInfo.metadata.tokenizer?.chat_template;
    this.slots = init.slots;
    this.contextLength = init.contextLength;
    this.kvCache = init.kvCache;
    this.requestedContextLength = init.requestedContextLength;
    this.mappedWeights = init.mappedWeights;
    this.parallel = init.parallel;
    this.threads = init.threads;
    this.loadDurationNs = init.loadDurationNs;
    this.threadpoolThreads = init.threadpoolThreads;
    this.inlineSampling = init.inlineSampling;
    this.vocabSize = vocabularySize(init.model);
    this.gpuLayers = init.model.gpuLayers;
    this.totalLayers = init.model.fileInsights.totalLayers;
  }

  static async load(o: LoadOptions): Promise<LoadedModel> {
    const started = process.hrtime.bigint();
    const kv = o.kv ?? DEFAULT_KV;
    const model = await o.llama.loadModel({ modelPath: o.spec.modelPath, useMmap: o.mappedWeights });
    try {
      const contextLength = Math.min(
        o.requestedContextLength,
        model.trainContextSize > 0 ? model.trainContextSize : o.requestedContextLength,
      );
      const context = await model
        .createContext({
          contextSize: contextLength,
          sequences: o.parallel,
          threads: o.threads,
          // auto, as llama-server: llama.cpp enables flash attention where the backend supports it for the model
          // (faster decode, and what a quantized V cache needs).
          flashAttention: kv.flashAttention === "auto" ? "auto" : kv.flashAttention === "on",
          ...(kv.type !== "f16"
            ? {
                experimentalKvCacheKeyType: ggmlTypeName(kv.type),
                experimentalKvCacheValueType: ggmlTypeName(kv.type),
              }
            : {}),
          failedCreationRemedy: false,
          ...(o.spec.adapters.length > 0
            ? { lora: { adapters: o.spec.adapters.map((filePath) => ({ filePath })) } }
            : {}),
        })
        .catch((e: unknown) => {
          if (kv.type === "f16") throw e;
          // The backend has no flash attention for this model, which a quantized V cache needs.
          throw new AppError(
            "MODEL_LOAD_FAILED",
            `KV cache type ${kv.type} cannot run for "${o.spec.name}" on this backend (${e instanceof Error ? e.message : String(e)}); the cache types it can run: ${runnableKvCacheTypes("off").join(", ")}`,
            { cause: e },
          );
        });
      // Decoding bypasses node-llama-cpp's sequence objects: the slot loop drives the native context (the port).
      const name = o.spec.name;
      // Its decode and sampling calls timed (/metrics: where the accelerator's time goes).
      const clock = new DecodeClock((time) => o.metrics.onDecodeTime?.(name, time));
      const native = timedContext(nativeContextOf(context, model), clock);
      const slots = new SlotLoop(native, {
        parallel: o.parallel,
        maxQueue: o.maxQueue,
        turns: decodeTurnsFor(o.llama),
        inline: INLINE_DECODE,
        pipeline: pipelinesSteps(o.stepPipeline ?? "auto", model.gpuLayers, model.fileInsights.totalLayers),
        onPipeline: (event) => o.metrics.onPipeline?.(name, event),
        moveSlots: o.moveSlots ?? true,
        onPoolChange: (busy, queued) => {
          clock.setWork(busy + queued > 0);
          o.metrics.onQueueDepth?.(name, queued);
          o.metrics.onBusySequences?.(name, busy);
        },
        onMove: (ok) => o.metrics.onSequenceMove?.(name, ok),
        // Saved states belong to this context: another's shape (context size, sequences) or model would not fit.
        promptCache: o.promptCache?.scoped(native),
      });
      slots.onDecode = (batch, sequences, active, continued) =>
        o.metrics.onDecode?.(name, batch, sequences, active, continued);
      // A model with a Jinja template has it rendered as written (prompt.ts, as llama.cpp does); node-llama-cpp's
      // wrapper is for the others.
      const chatWrapper = model.fileInfo.metadata.tokenizer?.chat_template
        ? resolveChatWrapper(model, { type: "general" })
        : resolveChatWrapper(model);
      // A vision model's projector: without the patched build's image input the model still serves text.
      const projector =
        o.spec.projector !== undefined && mtmdAvailable(o.llama)
          ? await loadProjector(model, o.spec.projector, { threads: o.threads })
          : undefined;
      const draft = o.spec.draft
        ? await loadDraftModel({
            llama: o.llama,
            spec: o.spec,
            draft: o.spec.draft,
            target: model,
            contextLength,
            parallel: o.parallel,
            threads: o.threads,
            mappedWeights: o.mappedWeights,
          })
        : undefined;
      const loadDurationNs = Number(process.hrtime.bigint() - started);
      o.metrics.onLoad?.(name, loadDurationNs / 1e9);
      const loaded = new LoadedModel({
        spec: o.spec,
        model,
        context,
        chatWrapper,
        slots,
        contextLength,
        kvCache: {
          ...kv,
          bytes: (() => {
            const shape = kvShape(model.fileInfo.metadata);
            return shape ? kvCacheBytes(shape, contextLength * o.parallel, kv.type) : 0;
          })(),
        },
        requestedContextLength: o.requestedContextLength,
        mappedWeights: o.mappedWeights,
        parallel: o.parallel,
        threads: o.threads,
        loadDurationNs,
        threadpoolThreads: native.threadpoolThreads,
        inlineSampling: native.inlineSampling,
        projector,
        dropCached: () => o.promptCache?.dropScope(native),
      });
      loaded.draft = draft;
      return loaded;
    } catch (e) {
      await model.dispose();
      throw e;
    }
  }

  /** Lazily created embedding context (same weights, its own KV). */
  embeddings(): Promise<LlamaEmbeddingContext> {
    this.embeddingContext ??= this.model.createEmbeddingContext({
      contextSize: this.contextLength,
      threads: this.threads,
    });
    return this.embeddingContext;
  }

  /** A request used these weights under `name`: /api/ps lists them by the name used last (as Ollama). */
  usedAs(name: string): void {
    this.names.delete(name);
    this.names.add(name);
  }

  /** The name the latest request used. */
  get name(): string {
    return [...this.names].at(-1) ?? this.spec.name;
  }

  /** Lazily created ranking contexts (same weights, rank pooling, their own KV): models with a rank head only. */
  ranking(): Promise<Ranker> {
    this.rankingContext ??= createRanker(this.model, { contextSize: this.contextLength, threads: this.threads });
    return this.rankingContext;
  }

  get idle(): boolean {
    return this.users === 0;
  }

  /** Marks a request as using the model; cancels a pending keep-alive expiry. */
  hold(keepAliveMs: number | null): void {
    this.users++;
    this.keepAliveMs = keepAliveMs;
    this.lastUsed = Date.now();
    this.clearTimer();
    this.expiresAt = null;
  }

  /**
   * Ends a request's use. When the model goes idle, the keep-alive decides: `onExpire` now (0), later (ms) or never
   * (null).
   */
  release(onExpire: () => void): void {
    this.users--;
    this.lastUsed = Date.now();
    if (this.users > 0) return;
    const ms = this.keepAliveMs;
    if (ms === null) return;
    if (ms <= 0) {
      onExpire();
      return;
    }
    this.expiresAt = Date.now() + ms;
    this.timer = setLongTimeout(onExpire, ms);
  }

  clearTimer(): void {
    this.timer?.clear();
    this.timer = undefined;
  }

  async dispose(): Promise<void> {
    this.clearTimer();
    // A sequence move started by the last requests' releases may still be copying.
    await this.slots.drained();
    this.dropCached();
    const emb = this.embeddingContext;
    if (emb) await (await emb.catch(() => undefined))?.dispose();
    const rank = this.rankingContext;
    if (rank) await (await rank.catch(() => undefined))?.dispose();
    await this.imageEncodes.clear();
    await this.projector?.dispose();
    await this.context.dispose();
    await this.model.dispose();
    if (this.draft) {
      await this.draft.slots.drained();
      await this.draft.context.dispose();
      await this.draft.model.dispose();
    }
  }
}

/** The vocabulary's size, from the GGUF's token list (what llama.cpp's n_vocab counts). */
function vocabularySize(model: LlamaModel): number {
  const tokens = (model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly unknown[] } } }).tokenizer?.ggml
    ?.tokens;
  return tokens?.length ?? 0;
}
