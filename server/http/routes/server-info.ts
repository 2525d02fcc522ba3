// Liveness/readiness, metrics, version and running models.
import { Router } from "express";
import type { ServerDeps } from "../deps.ts";

/** keep_alive forever: a date far in the future, as clients expect a timestamp. */
const FOREVER = "9999-12-31T23:59:59Z";

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
  r.get("/api/version", (_req, res) => {
    res.json({ version: deps.version, engine: deps.engine.buildInfo });
  });
  r.get("/api/ps", async (_req, res) => {
    const running = deps.engine.running();
    const details = new Map((await deps.store.list()).map((m) => [m.name, m.details]));
    res.json({
      models: running.map((m) => ({
        name: m.name,
        model: m.name,
        size: m.size,
        digest: m.digest.replace(/^sha256:/, ""),
        details: details.get(m.name) ?? null,
        expires_at: m.expiresAt ?? FOREVER,
        size_vram: 0,
        context_length: m.contextLength,
      })),
    });
  });
  return r;
}
