// Prometheus metrics of the model server (prom-client, one registry per server instance).
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { collectProcessMetrics } from "../common/process-metrics.ts";
import type { Request, RequestHandler } from "express";
import type { EngineMetricsSink } from "../engine/metrics.ts";

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "gantry_http_requests_total",
    help: "HTTP requests by route, method and status",
    labelNames: ["route", "method", "status"],
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: "gantry_http_request_duration_seconds",
    help: "HTTP request duration",
    labelNames: ["route"],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: "gantry_in_flight_requests",
    help: "Generation requests being served or queued (drives autoscaling)",
    registers: [this.registry],
  });
  readonly promptTokens = new Counter({
    name: "gantry_prompt_tokens_total",
    help: "Prompt tokens of generation requests; cached=true: found in the sequence's KV cache, not evaluated again",
    labelNames: ["model", "cached"],
    registers: [this.registry],
  });
  readonly generatedTokens = new Counter({
    name: "gantry_generated_tokens_total",
    help: "Tokens generated",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly draftTokens = new Counter({
    name: "gantry_draft_tokens_total",
    help: "Speculative decoding: tokens drafted for the model to verify",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly draftAcceptedTokens = new Counter({
    name: "gantry_draft_accepted_tokens_total",
    help: "Speculative decoding: drafted tokens the model accepted (the acceptance rate is this over drafted)",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly ttft = new Histogram({
    name: "gantry_time_to_first_token_seconds",
    help: "Time from request to first generated token",
    labelNames: ["model"],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly tokensPerSecond = new Histogram({
    name: "gantry_tokens_per_second",
    help: "Generation speed of a request (generated tokens / eval time)",
    labelNames: ["model"],
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "gantry_queue_depth",
    help: "Requests waiting for a free sequence",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly busySequences = new Gauge({
    name: "gantry_busy_sequences",
    help: "Sequences generating right now",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly loadedModels = new Gauge({
    name: "gantry_loaded_models",
    help: "Models loaded in memory",
    registers: [this.registry],
  });
  readonly loadSeconds = new Histogram({
    name: "gantry_model_load_seconds",
    help: "Model load time",
    labelNames: ["model"],
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly decodeSteps = new Counter({
    name: "gantry_decode_steps_total",
    help: "Batched decode steps of generation contexts: one per token position of the generating streams (a burst of prompts larger than the batch is one step of several calls)",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly pipelinedSteps = new Counter({
    name: "gantry_decode_steps_pipelined_total",
    help: "Decode steps started with tokens their streams did not have yet, their text streamed during the step (GANTRY_STEP_PIPELINE)",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly pipelineDropped = new Counter({
    name: "gantry_pipeline_dropped_tokens_total",
    help: "Tokens decoded ahead (step pipeline) for a stream that then ended without them (a stop string, an abort); they stay in its sequence's cache",
    labelNames: ["model"],
    registers: [this.registry],
  });
  // Decode seconds per step against llama-batched-bench's step time say whether the accelerator is slower; idle seconds
  // per step say how long it waits for the host (issue 39: 16 ms steps on an H200 where llama.cpp takes 9.8).
  readonly decodeSeconds = new Counter({
    name: "gantry_decode_seconds_total",
    help: "Wall seconds with a decode call of the model in flight, from the call to its result on the JS thread (what its accelerator computes; a decode on a worker thread also waits there for the JS thread to take its result); call=generation: one token for each of its sequences (a generation step), call=prompt: prompt tokens or a draft",
    labelNames: ["model", "call"],
    registers: [this.registry],
  });
  readonly decodeIdleSeconds = new Counter({
    name: "gantry_decode_idle_seconds_total",
    help: "Wall seconds with no decode call of the model in flight while it had work (a request holding or waiting for a sequence): what its accelerator waits for; part=sampling: in the rows' sampling calls, part=other: the rest (the streams' JavaScript, scheduling, HTTP, a request's preparation)",
    labelNames: ["model", "part"],
    registers: [this.registry],
  });
  readonly decodeJsBusySeconds = new Counter({
    name: "gantry_decode_js_busy_seconds_total",
    help: "Of gantry_decode_seconds_total, decode calls on a worker thread (pipelined steps): the seconds the JS thread was busy meanwhile (the streams' JavaScript, HTTP); near the decode seconds, decodes' results waited for it",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly decodeCalls = new Counter({
    name: "gantry_decode_calls_total",
    help: "llama_decode calls of generation contexts; call=generation: one token for each of its sequences (a generation step), call=prompt: prompt tokens or a draft",
    labelNames: ["model", "call"],
    registers: [this.registry],
  });
  readonly sequenceMoves = new Counter({
    name: "gantry_sequence_moves_total",
    help: "Sequences moved to keep the busy sequence ids adjacent: a busy one down into a gap, or a request's new sequence next to the busy ones (result: ok, failed)",
    labelNames: ["model", "result"],
    registers: [this.registry],
  });
  readonly promptCacheLookups = new Counter({
    name: "gantry_prompt_cache_requests_total",
    help: "Prompts its sequence held too little of, by what the RAM prompt cache did (result: hit = a saved state restored, miss = none held more, failed = the runtime refused the saved state and the prompt was evaluated)",
    labelNames: ["model", "result"],
    registers: [this.registry],
  });
  readonly promptCacheRestoredTokens = new Counter({
    name: "gantry_prompt_cache_restored_tokens_total",
    help: "Prompt tokens restored from the RAM prompt cache instead of evaluated",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly promptCacheBytes = new Gauge({
    name: "gantry_prompt_cache_bytes",
    help: "Bytes of KV state the RAM prompt cache holds (all models)",
    registers: [this.registry],
  });
  readonly batchFill = new Histogram({
    name: "gantry_batch_fill_ratio",
    help: "Per decode step: sequences in the step / sequences generating (1 = full batch)",
    labelNames: ["model"],
    buckets: [0.25, 0.5, 0.75, 0.9, 0.99, 1],
    registers: [this.registry],
  });

  readonly imageEncodeSeconds = new Histogram({
    name: "gantry_image_encode_seconds",
    help: "Image encodes by a vision model's projector and their time (an image already in a sequence's cached prefix is not encoded again)",
    labelNames: ["model"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics ?? true) collectProcessMetrics(this.registry, "gantry_process_");
  }

  /**
   * The engine's monitoring callbacks, recorded into this registry. Token counts and TTFT are recorded by the HTTP
   * layer.
   */
  engineSink(): EngineMetricsSink {
    let loaded = 0;
    return {
      onLoad: (model, seconds) => {
        this.loadSeconds.observe({ model }, seconds);
        this.loadedModels.set(++loaded);
      },
      onUnload: () => {
        this.loadedModels.set((loaded = Math.max(0, loaded - 1)));
      },
      onDecode: (model, batchTokens, sequences, active, continued) => {
        this.decodeCalls.inc({ model, call: batchTokens === sequences ? "generation" : "prompt" });
        if (continued) return;
        this.decodeSteps.inc({ model });
        if (active > 0) this.batchFill.observe({ model }, Math.min(1, sequences / active));
      },
      onPipeline: (model, event) => {
        (event === "step" ? this.pipelinedSteps : this.pipelineDropped).inc({ model });
      },
      onDecodeTime: (model, { decode, generation, jsBusy, idle, sampling }) => {
        if (decode > 0) this.decodeSeconds.inc({ model, call: generation ? "generation" : "prompt" }, decode);
        if (jsBusy > 0) this.decodeJsBusySeconds.inc({ model }, jsBusy);
        if (sampling > 0) this.decodeIdleSeconds.inc({ model, part: "sampling" }, sampling);
        if (idle > sampling) this.decodeIdleSeconds.inc({ model, part: "other" }, idle - sampling);
      },
      onSequenceMove: (model, ok) => {
        this.sequenceMoves.inc({ model, result: ok ? "ok" : "failed" });
      },
      onPromptCache: (model, result, restoredTokens) => {
        this.promptCacheLookups.inc({ model, result });
        if (restoredTokens > 0) this.promptCacheRestoredTokens.inc({ model }, restoredTokens);
      },
      onPromptCacheBytes: (bytes) => {
        this.promptCacheBytes.set(bytes);
      },
      onImageEncode: (model, seconds) => {
        this.imageEncodeSeconds.observe({ model }, seconds);
      },
      onQueueDepth: (model, depth) => {
        this.queueDepth.set({ model }, depth);
      },
      onBusySequences: (model, busy) => {
        this.busySequences.set({ model }, busy);
      },
    };
  }

  /** Express middleware counting requests by matched route (not raw path, to bound cardinality). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const end = this.requestDuration.startTimer();
      res.on("finish", () => {
        const route = routeOf(req);
        this.requests.inc({ route, method: req.method, status: String(res.statusCode) });
        end({ route });
      });
      res.on("close", () => {
        // 499: the client went away before the response finished (logged and counted, never sent).
        if (!res.writableFinished) {
          this.requests.inc({ route: routeOf(req), method: req.method, status: "499" });
        }
      });
      next();
    };
  }
}

/** The matched route of a request (its router's mount path and the route's; `/v1/messages`, not `/v1/messages/`). */
function routeOf(req: Request): string {
  const path = req.route?.path as unknown;
  if (!path) return "unmatched";
  return path === "/" && req.baseUrl ? req.baseUrl : `${req.baseUrl}${String(path)}`;
}
