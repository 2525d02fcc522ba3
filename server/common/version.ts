// The package version, read once from package.json.
import fs from "node:fs";
import path from "node:path";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as { version: string }
).version;

/**
 * The Ollama release whose API Gantry serves, reported as `version` by GET /api/version: Ollama clients compare it
 * against the minimum version they need (Gantry's own 0.x version would fail those checks). 0.12.11 is the first
 * Ollama with everything Gantry's /api answers (JSON-schema `format`, `logprobs`/`top_logprobs`); raise it when Gantry
 * serves what a later release added.
 */
export const OLLAMA_API_VERSION = "0.12.11";
