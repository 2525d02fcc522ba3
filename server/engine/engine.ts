// The engine on node-llama-cpp: implements the Engine contract (types.ts) on top of the model registry, each loaded
// model's slot loop and the generation loop.
import os from "node:os";
import type { Logger } from "../common/logger.ts";
import { AppError } from "../common/errors.ts";
import { Arrivals } from "./arrivals.ts";
import { embedTexts } from "./embedding.ts";
import { rankDocuments } from "./ranking.ts";
import { openDrafter } from "./drafters.ts";
import { vramBytes, type GpuSetting } from "./gpu.ts";
import { commonPrefixLength, runGeneration } from "./generation.ts";
import { contextOverflow, fitPrompt, keptTokens, shiftedMaxTokens } from "./fit-prompt.ts";
import { GrammarCache, grammarStopStrings } from "./grammars.ts";
import { llamaRuntime, type EngineBuildSettings } from "./llama-runtime.ts";
import type { EngineMetricsSink } from "./metrics.ts";
import { ModelRegistry, shuttingDown, type LoadRequest } from "./model-registry.ts";
import { applyAddonSettings } from "./native/node-llama-cpp.ts";
import { DEFAULT_MAX_IMAGE_BYTES, type ImageLimits } from "./image-decode.ts";
import { imagePrefill, imagePrompt } from "./image-prompt.ts";
import { DEFAULT_MAX_IMAGE_PIXELS } from "./native/mtmd.ts";
import { PromptCache } from "./prompt-cache.ts";
import { buildPrompt, type RenderTemplate } from "./prompt.ts";
import { ToolGrammars } from "./tool-grammar.ts";
import { OutputParser } from "../chat/output-parser.ts";
import { resolveSampling } from "./sampling.ts";
import { resolveThreads } from "./threads.ts";
import type { StepPipelineSetting } from "../common/step-pipeline-settings.ts";
import { contextLengthForMemory } from "./kv-cache.ts";
import { kvCacheProblem, type FlashAttention, type KvCacheType } from "../common/kv-cache-settings.ts";
import type {
  EmbedRequest,
  EmbedResult,
  RerankRequest,
  RerankResult,
  Engine,
  EngineBuildInfo,
  GenerateRequest,
  GenerationEvent,
  ModelSpec,
  RunningModel,
} from "./types.ts";

export interface EngineOptions {
  logger: Logger;
  /** Inference threads; 0 = physical cores. */
  threads: number;
  /** Sequences per loaded model (requests decoded together). */
  numParallel: number;
  /** Requests that may wait for a sequence per model before SERVER_BUSY. */
  maxQueue: number;
  maxLoadedModels: number;
  /** Default context length per sequence (num_ctx overrides it); 0 = by memory (kv-cache.ts). */
  contextLength: number;
  /** The KV cache's element type (default f16). */
  kvCacheType?: KvCacheType;
  /** Flash attention (default auto: where the backend runs it). */
  flashAttention?: FlashAttention;
  /** Keep-alive when a request gives none; null = forever. */
  defaultKeepAliveMs: number | null;
  metrics?: EngineMetricsSink;
  /** Go-template renderer for TEMPLATE overrides. */
  renderTemplate?: RenderTemplate;
  /**
   * Which binary (GANTRY_ENGINE_BUILD, GANTRY_CACHE, GANTRY_ENGINE_CPU): auto = the patched local build when setup made
   * it, else the prebuilt binary; source = the patched build of llama.cpp from source; prebuilt = the prebuilt one.
   */
  engineBuild: EngineBuildSettings;
  /** GPU backend (GANTRY_GPU); default off (the CPU). */
  gpu?: GpuSetting;
  /**
   * ggml poll level of the persistent threadpool's idle threads (0-100, default 50 as llama-server; 0 = sleep between
   * decode steps).
   */
  threadpoolPoll?: number;
  /** GANTRY_STEP_PIPELINE (step-pipeline.ts); default auto: pipelined steps where the model's layers are on a GPU. */
  stepPipeline?: StepPipelineSetting;
  /** GANTRY_ARRIVAL_WAIT_MS: how long a prompt waits for the requests announced with it (default ARRIVAL_WAIT_MS). */
  arrivalWaitMs?: number;
  /** Limits on request images (vision models): encoded bytes and decoded pixels. */
  imageLimits?: Partial<ImageLimits>;
  /** Bytes of KV state the RAM prompt cache may hold, all models together (GANTRY_PROMPT_CACHE_RAM); 0 = none. */
  promptCacheBytes?: number;
  /** The RAM prompt cache itself, for tests that look inside it (promptCacheBytes is then ignored). */
  promptCache?: PromptCache;
}

export async function createEngine(opts: EngineOptions): Promise<Engine & { readonly threads: number }> {
  const threads = resolveThreads(opts.threads);
  const { llama, build } = await llamaRuntime(threads, opts.logger, opts.engineBuild, opts.gpu);
  // Before any context exists: the addon reads its settings when it creates one.
  applyAddonSettings(llama, { threadpoolPoll: opts.threadpoolPoll ?? 50 });
  const patched = build === "patched-local";
  const buildInfo: EngineBuildInfo = {
    build,
    threadpool: patched,
    inlineSampling: patched,
    inlineDecode: patched,
  };
  const metrics = opts.metrics ?? {};
  const imageLimits: ImageLimits = {
    maxBytes: opts.imageLimits?.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES,
    maxPixels: opts.imageLimits?.maxPixels ?? DEFAULT_MAX_IMAGE_PIXELS,
  };
  const kv = { type: opts.kvCacheType ?? "f16", flashAttention: opts.flashAttention ?? "auto" } as const;
  const problem = kvCacheProblem(kv.type, kv.flashAttention);
  if (problem) throw new AppError("BAD_REQUEST", problem);
  const contextLength = opts.contextLength || contextLengthForMemory(await freeMemory(llama));
  const promptCache =
    opts.promptCache ??
    ((opts.promptCacheBytes ?? 0) > 0
      ? new PromptCache(opts.promptCacheBytes!, (bytes) => metrics.onPromptCacheBytes?.(bytes))
      : undefined);
  const registry = new ModelRegistry({
    llama,
    logger: opts.logger,
    metrics,
    threads,
    numParallel: opts.numParallel,
    maxQueue: opts.maxQueue,
    maxLoadedModels: opts.maxLoadedModels,
    contextLength,
    kv,
    promptCache,
    stepPipeline: opts.stepPipeline ?? "auto",
  });
  const grammars = new GrammarCache(llama);
  const toolGrammars = new ToolGrammars(llama);
  const arrivals = new Arrivals(opts.arrivalWaitMs);
  // Aborts every running request when a shutdown deadline passes.
  const shutdownController = new AbortController();
  const keepAliveOf = (ms: number | null | undefined): number | null =>
    ms === undefined ? opts.defaultKeepAliveMs : ms;
  opts.logger.info(
    {
      threads,
      gpu: llama.gpu,
      numParallel: opts.numParallel,
      contextLength,
      kvCache: kv,
      engine: buildInfo,
      promptCacheBytes: patched ? (promptCache?.maxBytes ?? 0) : 0,
    },
    "engine ready",
  );

  async function* generate(req: GenerateRequest): AsyncGenerator<GenerationEvent> {
    const startedNs = process.hrtime.bigint();
    const sampling = resolveSampling(req.model.parameters, req.options);
    const signal = AbortSignal.any([req.signal, shutdownController.signal]);
    try {
      const { loaded, loadDurationNs } = await registry.acquire(
        req.model,
        sampling,
        keepAliveOf(req.keepAliveMs),
        signal,
      );
      try {
        const bos = loaded.model.tokens.bos;
        const prompt = fitPrompt(
          (input) =>
            buildPrompt(
              {
                model: loaded.model,
                spec: req.model,
                chatWrapper: loaded.chatWrapper,
                renderTemplate: opts.renderTemplate,
                vocabSize: loaded.vocabSize,
                jinjaTemplate: loaded.jinjaTemplate,
                ...(loaded.projector ? { imageMarker: loaded.projector.info.marker } : {}),
              },
              input,
              { tools: req.tools, think: req.think },
            ),
          req.input,
          loaded.contextLength,
          { truncate: req.truncate !== false, numKeep: sampling.numKeep, bos },
        );
        const images =
          prompt.withImages && loaded.projector
            ? await imagePrompt(llama, loaded.projector, prompt.withImages, imageLimits, signal)
            : undefined;
        try {
          const promptTokens = images?.tokens ?? prompt.tokens;
          if (promptTokens.length >= loaded.contextLength)
            throw contextOverflow(promptTokens.length, loaded.contextLength);
          // A template that renders nothing (and a model without BOS) leaves nothing to evaluate: the client's to fix.
          if (promptTokens.length === 0)
            throw new AppError("BAD_REQUEST", "the prompt is empty: the template rendered no tokens to evaluate");
          const calls = prompt.output?.tools;
          const toolGrammar = calls ? await toolGrammars.get(calls.format, calls.request) : undefined;
          const grammar = calls?.fromStart ? toolGrammar : await grammars.get(req.format);
          const shifting = req.shift !== false && !images;
          // Waiting for a sequence to free up can take a whole generation: nobody should wait for this one meanwhile.
          if (loaded.slots.busy >= loaded.parallel) req.arrival?.settle();
          const onMoveFailed = (err: unknown) =>
            opts.logger.warn(
              { model: loaded.spec.name, err: err instanceof Error ? err.message : String(err) },
              "could not move a busy sequence next to the other busy ones; this model's steps may take extra passes",
            );
          const slot = await loaded.slots.acquire(
            signal,
            (s) => commonPrefixLength(s.tokens, promptTokens),
            (s) => s.tokens.length,
            loaded.slots.restorable(promptTokens),
            onMoveFailed,
          );
          try {
            yield* runGeneration({
              loaded,
              slot,
              promptTokens,
              stopStrings: [...prompt.stopStrings, ...grammarStopStrings(grammar)],
              sampling: shifting
                ? { ...sampling, maxTokens: shiftedMaxTokens(sampling.maxTokens, loaded.contextLength) }
                : sampling,
              grammar,
              signal,
              metrics,
              logger: opts.logger,
              startedNs,
              loadDurationNs,
              admission: { arrival: req.arrival, arrivals },
              ...(req.logprobs ? { logprobs: req.logprobs } : {}),
              ...(req.returnTokens ? { returnTokens: true } : {}),
              ...(shifting ? { shiftKeep: keptTokens(sampling.numKeep, promptTokens, bos, loaded.contextLength) } : {}),
              // Drafts are verified by plain sampling: not with a grammar (one that applies from a tool call on
              // included), log probabilities or images.
              drafter:
                !grammar && !toolGrammar && !req.logprobs && !images
                  ? await openDrafter(loaded, sampling, signal)
                  : undefined,
              ...(prompt.output
                ? {
                    output: {
                      parser: new OutputParser(prompt.output.parser),
                      lazyGrammar: calls && !calls.fromStart ? toolGrammar : undefined,
                    },
                  }
                : {}),
              ...(images
                ? {
                    images: imagePrefill({
                      prompt: images,
                      slots: loaded.slots,
                      projector: loaded.projector!,
                      context: loaded.context,
                      encodes: loaded.imageEncodes,
                      onEncode: (seconds) => metrics.onImageEncode?.(loaded.spec.name, seconds),
                    }),
                  }
                : {}),
            });
          } finally {
            loaded.slots.release(slot, onMoveFailed);
          }
        } finally {
          await images?.dispose();
        }
      } finally {
        registry.release(loaded);
      }
    } finally {
      req.arrival?.settle();
    }
  }

  async function withModel<T>(
    model: ModelSpec,
    keepAliveMs: number | null | undefined,
    load: LoadRequest,
    signal: AbortSignal | undefined,
    fn: (loaded: Awaited<ReturnType<ModelRegistry["acquire"]>>) => Promise<T>,
  ): Promise<T> {
    const held = await registry.acquire(model, load, keepAliveOf(keepAliveMs), signal);
    try {
      return await fn(held);
    } finally {
      registry.release(held.loaded);
    }
  }

  return {
    threads,
    buildInfo,
    generate,
    announce: () => arrivals.announce(),
    arrivalWaitMs: arrivals.waitMs,

    load: (model, o) =>
      withModel(
        model,
        o.keepAliveMs,
        resolveSampling(model.parameters, o.options ?? {}),
        o.signal,
        async ({ loadDurationNs }) => ({ loadDurationNs }),
      ),

    async unload(name) {
      const loaded = registry.byName(name);
      if (!loaded) return false;
      await registry.unload(loaded);
      return true;
    },

    embed(req: EmbedRequest): Promise<EmbedResult> {
      const startedNs = process.hrtime.bigint();
      const sampling = resolveSampling(req.model.parameters, req.options);
      return withModel(req.model, req.keepAliveMs, sampling, req.signal, async ({ loaded, loadDurationNs }) => {
        const { embeddings, promptTokens } = await embedTexts(loaded, req.input, req.truncate);
        metrics.onTokens?.(loaded.spec.name, promptTokens, 0);
        return {
          embeddings,
          promptEvalCount: promptTokens,
          loadDurationNs,
          totalDurationNs: Number(process.hrtime.bigint() - startedNs),
        };
      });
    },

    rerank(req: RerankRequest): Promise<RerankResult> {
      const startedNs = process.hrtime.bigint();
      const sampling = resolveSampling(req.model.parameters, req.options);
      return withModel(req.model, req.keepAliveMs, sampling, req.signal, async ({ loaded, loadDurationNs }) => {
        const { scores, promptTokens } = await rankDocuments(loaded, req.query, req.documents);
        metrics.onTokens?.(loaded.spec.name, promptTokens, 0);
        return {
          scores,
          promptEvalCount: promptTokens,
          loadDurationNs,
          totalDurationNs: Number(process.hrtime.bigint() - startedNs),
        };
      });
    },

    countTokens: (model, text) =>
      withModel(model, undefined, {}, undefined, async ({ loaded }) => loaded.model.tokenize(text, true).length),

    running(): RunningModel[] {
      return [...registry.models.values()].map((m) => ({
        name: m.name,
        digest: m.spec.digest,
        // As Ollama's: the memory the loaded model takes, its KV cache included (on the GPU with the layers there).
        size: m.spec.size + m.kvCache.bytes,
        sizeVram:
          vramBytes(m.spec.size, m.gpuLayers, m.totalLayers) + vramBytes(m.kvCache.bytes, m.gpuLayers, m.totalLayers),
        expiresAt:
          m.idle && m.expiresAt !== null
            ? new Date(m.expiresAt).toISOString()
            : m.keepAliveMs === null
              ? null
              : new Date(Date.now() + m.keepAliveMs).toISOString(),
        contextLength: m.contextLength,
        kvCache: m.kvCache,
        parallel: m.parallel,
        busySequences: m.slots.busy,
        queued: m.slots.queued,
        threadpoolThreads: m.threadpoolThreads,
        inlineSampling: m.inlineSampling,
        inlineDecode: m.slots.inlineDecode,
        stepPipeline: m.slots.pipelined,
        decodeSteps: { ...m.slots.steps },
      }));
    },

    isLoaded: (name) => {
      const m = registry.byName(name);
      return m !== undefined && !m.unloading;
    },

    async shutdown({ deadlineMs = 10_000 } = {}) {
      if (registry.closed) return;
      registry.closed = true;
      for (const m of registry.models.values()) m.slots.rejectWaiters(shuttingDown);
      registry.notify();
      const deadline = Date.now() + deadlineMs;
      while ([...registry.models.values()].some((m) => !m.idle) && Date.now() < deadline) {
        await Promise.race([registry.changed(), new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
      }
      shutdownController.abort(new AppError("SHUTTING_DOWN", "the server is shutting down"));
      await Promise.all([...registry.models.values()].map((m) => registry.unload(m)));
    },
  };
}

/**
 * Free memory where the model's cache goes (Ollama's tier basis): the GPU's VRAM, or the RAM on the CPU, within the
 * process's cgroup memory limit (a pod's limit, not its node's free RAM: a context sized by the node's is OOM-killed).
 */
async function freeMemory(llama: Awaited<ReturnType<typeof llamaRuntime>>["llama"]): Promise<number> {
  if (llama.gpu !== false) return (await llama.getVramState()).free;
  return Math.min(os.freemem(), process.availableMemory());
}
