// Liveness/readiness, metrics, version and running models.
import { Router } from "express";
import { OLLAMA_API_VERSION } from "../../common/version.ts";
import type { ServerDeps } from "../deps.ts";

/** keep_alive forever: a date far in the future, as clients expect a timestamp. */
const FOREVER = "9999-12-31T23:59:59Z";

/** GET / (a liveness text), /health (readiness: 503 while a model loads) and /metrics. */
export function serverInfoRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.get("/", (_req, res) => {
    res.type("text/plain").send("Gantry is running");
  });
  r.head("/", (_req, res) => {
    res.status(200).end();
  });
  r.get("/health", (_req, res) => {
    const s = deps.readiness;
    if (s.shuttingDown) {
      res.status(503).json({ status: "shutting down", error: "server is shutting down" });
      return;
    }
    if (s.failed) {
      res.status(503).json({ status: "failed", error: s.failed });
      return;
    }
    if (s.loading) {
      res.status(503).json({ status: "loading", error: `loading model ${s.loading}` });
      return;
    }
    res.json({ status: "ok" });
  });
  r.get("/metrics", async (_req, res) => {
    res.setHeader("Content-Type", deps.metrics.registry.contentType);
    res.send(await deps.metrics.registry.metrics());
  });
  return r;
}

/** GET /api/version and /api/ps (mounted under /api). */
export function runtimeInfoRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.get("/version", (_req, res) => {
    // `version` is the Ollama API level Gantry speaks (what Ollama clients compare against their minimum version);
    // Gantry's own version is `gantry`.
    res.json({ version: OLLAMA_API_VERSION, gantry: deps.version, engine: deps.engine.buildInfo });
  });
  r.get("/ps", async (_req, res) => {
    const running = deps.engine.running();
    const stored = new Map((await deps.store.list()).map((m) => [m.name, m]));
    res.json({
      models: running.map((m) => ({
        name: m.name,
        model: m.name,
        size: m.size,
        // The model's identity as /api/tags shows it (its manifest); a GGUF file served by path has only its weights.
        digest: (stored.get(m.name)?.digest ?? m.digest).replace(/^sha256:/, ""),
        details: stored.get(m.name)?.details ?? null,
        expires_at: m.expiresAt ?? FOREVER,
        size_vram: m.sizeVram,
        context_length: m.contextLength,
        // Gantry's: the KV cache's share of `size` and what sets it (GANTRY_KV_CACHE_TYPE, GANTRY_FLASH_ATTENTION).
        kv_cache: { type: m.kvCache.type, flash_attention: m.kvCache.flashAttention, size: m.kvCache.bytes },
      })),
    });
  });
  return r;
}
