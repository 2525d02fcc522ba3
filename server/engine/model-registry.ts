// Which models are loaded: load on first use, reload when num_ctx or use_mmap changes (once idle), keep-alive expiry,
// and least-recently-used eviction of idle models when maxLoadedModels would be exceeded (waiting when none is idle).
import type { Llama } from "node-llama-cpp";
import { AppError, isAppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import { LoadedModel } from "./loaded-model.ts";
import type { EngineMetricsSink } from "./metrics.ts";
import { clientClosed } from "./slot-pool.ts";
import type { FlashAttention, KvCacheType } from "../common/kv-cache-settings.ts";
import type { PromptCache } from "./prompt-cache.ts";
import type { ModelSpec } from "./types.ts";
import { mapWeights } from "./weights-mapping.ts";
import type { StepPipelineSetting } from "../common/step-pipeline-settings.ts";

/** A request's load options (numCtx undefined: the server's default context, as Ollama; useMmap undefined: whatever
 * the loaded model has, or the default when loading). */
export interface LoadRequest {
  numCtx?: number | undefined;
  useMmap?: boolean | undefined;
}

export interface RegistryOptions {
  llama: Llama;
  logger: Logger;
  metrics: EngineMetricsSink;
  threads: number;
  numParallel: number;
  maxQueue: number;
  maxLoadedModels: number;
  contextLength: number;
  kv: { type: KvCacheType; flashAttention: FlashAttention };
  /** The server's RAM prompt cache, shared by the loaded models. */
  promptCache?: PromptCache | undefined;
  stepPipeline: StepPipelineSetting;
}

export const shuttingDown = (): AppError => new AppError("SHUTTING_DOWN", "the server is shutting down");

export class ModelRegistry {
  readonly models = new Map<string, LoadedModel>();
  private readonly loading = new Map<string, Promise<LoadedModel>>();
  private readonly unloads = new Map<LoadedModel, Promise<void>>();
  private listeners: Array<() => void> = [];
  private readonly o: RegistryOptions;
  closed = false;

  constructor(o: RegistryOptions) {
    this.o = o;
  }

  /**
   * The loaded model, held for one request (call `release` when done). A context length other than the loaded one
   * (num_ctx, else the server's default: an earlier request's small num_ctx must not silently truncate later prompts)
   * or a use_mmap other than the loaded one reloads it once idle; useMmap left undefined accepts what it has.
   */
  async acquire(
    spec: ModelSpec,
    load: LoadRequest,
    keepAliveMs: number | null,
    signal?: AbortSignal,
  ): Promise<{ loaded: LoadedModel; loadDurationNs: number }> {
    for (;;) {
      if (this.closed) throw shuttingDown();
      if (signal?.aborted) throw clientClosed();
      const existing = this.models.get(weightsKey(spec));
      if (existing) {
        const fits =
          !existing.unloading &&
          existing.requestedContextLength === (load.numCtx ?? this.o.contextLength) &&
          (load.useMmap === undefined || existing.mappedWeights === mapWeights(load.useMmap, this.o.llama));
        if (fits) {
          existing.usedAs(spec.name);
          existing.hold(keepAliveMs);
          return { loaded: existing, loadDurationNs: 0 };
        }
        await this.unload(existing);
        continue;
      }
      const pending = this.loading.get(weightsKey(spec));
      if (pending) {
        await pending.catch(() => undefined);
        continue;
      }
      if (this.models.size + this.loading.size >= this.o.maxLoadedModels) {
        const victim = this.leastRecentlyUsedIdle();
        if (victim) await this.unload(victim);
        else await this.changed(signal);
        continue;
      }
      const loaded = await this.load(spec, load);
      loaded.hold(keepAliveMs);
      return { loaded, loadDurationNs: loaded.loadDurationNs };
    }
  }

  /** Ends a request's hold; applies keep-alive when the model goes idle. */
  release(loaded: LoadedModel): void {
    loaded.release(() => void this.unload(loaded));
    if (loaded.idle) this.notify();
  }

  /** Unloads once the model's running requests are done. Idempotent. */
  unload(loaded: LoadedModel): Promise<void> {
    let p = this.unloads.get(loaded);
    if (!p) {
      loaded.unloading = true;
      p = (async () => {
        while (!loaded.idle) await this.changed();
        loaded.clearTimer();
        this.models.delete(weightsKey(loaded.spec));
        try {
          await loaded.dispose();
        } catch (e) {
          this.o.logger.warn({ err: e, model: loaded.spec.name }, "error while unloading model");
        }
        this.unloads.delete(loaded);
        this.o.metrics.onUnload?.(loaded.spec.name);
        this.o.logger.info({ model: loaded.spec.name }, "model unloaded");
        this.notify();
      })();
      this.unloads.set(loaded, p);
    }
    return p;
  }

  /** Resolves on the next change (a model went idle, loaded, or unloaded); rejects when `signal` aborts. */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.listeners = this.listeners.filter((l) => l !== done);
        reject(clientClosed());
      };
      const done = (): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.listeners.push(done);
    });
  }

  notify(): void {
    const ls = this.listeners;
    this.listeners = [];
    for (const l of ls) l();
  }

  private async load(spec: ModelSpec, load: LoadRequest): Promise<LoadedModel> {
    const requested = load.numCtx ?? this.o.contextLength;
    const mappedWeights = mapWeights(load.useMmap, this.o.llama);
    const p = (async () => {
      const started = Date.now();
      try {
        const loaded = await LoadedModel.load({
          llama: this.o.llama,
          spec,
          requestedContextLength: requested,
          mappedWeights,
          parallel: this.o.numParallel,
          maxQueue: this.o.maxQueue,
          kv: this.o.kv,
          threads: this.o.threads,
          metrics: this.o.metrics,
          promptCache: this.o.promptCache,
          stepPipeline: this.o.stepPipeline,
        });
        loaded.usedAs(spec.name);
        this.models.set(weightsKey(spec), loaded);
        this.o.logger.info(
          {
            model: spec.name,
            contextLength: loaded.contextLength,
            parallel: loaded.parallel,
            kvCache: loaded.kvCache,
            mappedWeights,
            threadpoolThreads: loaded.threadpoolThreads,
            ms: Date.now() - started,
          },
          "model loaded",
        );
        return loaded;
      } catch (e) {
        if (isAppError(e)) throw e;
        this.o.logger.error({ err: e, model: spec.name }, "model load failed");
        throw new AppError(
          "MODEL_LOAD_FAILED",
          `failed to load model "${spec.name}": ${e instanceof Error ? e.message : String(e)}`,
          { cause: e },
        );
      }
    })();
    this.loading.set(weightsKey(spec), p);
    try {
      return await p;
    } finally {
      this.loading.delete(weightsKey(spec));
      this.notify();
    }
  }

  /** The loaded model that a request under this name (or any alias of the same weights) is using. */
  byName(name: string): LoadedModel | undefined {
    for (const m of this.models.values()) if (m.names.has(name)) return m;
    return undefined;
  }

  private leastRecentlyUsedIdle(): LoadedModel | undefined {
    let best: LoadedModel | undefined;
    for (const m of this.models.values()) {
      if (m.idle && !m.unloading && (!best || m.lastUsed < best.lastUsed)) best = m;
    }
    return best;
  }
}

/**
 * Loaded models are keyed by their weights, not their names: aliases (cp, create FROM another model, a GGUF path and
 * its imported name) share one context. Prompt formatting always uses the request's own ModelSpec.
 */
export function weightsKey(spec: ModelSpec): string {
  return [spec.digest, ...spec.adapters, spec.projector ?? "", spec.draft?.digest ?? ""].join("|");
}
