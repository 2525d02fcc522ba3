// CORS as Ollama does it: localhost origins on any port (and app/file/tauri schemes) always, plus GANTRY_ORIGINS.
import type { RequestHandler } from "express";
import { originMatches } from "../common/origins.ts";

const LOCAL = /^(https?:\/\/(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(:\d+)?|app:\/\/.*|file:\/\/.*|tauri:\/\/.*)$/;

/** Pure: is this origin allowed? `extra` entries may be exact origins or "*" or contain a "*" wildcard. */
export function originAllowed(origin: string, extra: string[]): boolean {
  return LOCAL.test(origin) || originMatches(origin, extra);
}

export function cors(extraOrigins: string): RequestHandler {
  const extra = extraOrigins
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin && originAllowed(origin, extra)) {
      res.setHeader("Access-Control-Allow-Origin", origin);
      res.setHeader("Vary", "Origin");
      res.setHeader("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
      res.setHeader(
        "Access-Control-Allow-Headers",
        "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, OpenAI-Beta, X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Api-Key, Anthropic-Version, Anthropic-Beta, Anthropic-Dangerous-Direct-Browser-Access",
      );
    }
    if (req.method === "OPTIONS") {
      res.status(origin && originAllowed(origin, extra) ? 204 : 403).end();
      return;
    }
    next();
  };
}
