// The package version, read once from package.json (at the package root: two levels up in a checkout, three in the
// built package's dist/).
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "./package-files.ts";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(packageRoot(), "package.json"), "utf8")) as { version: string }
).version;

/**
 * The Ollama release whose API Gantry serves, reported as `version` by GET /api/version: Ollama clients compare it
 * against the minimum version they need (Gantry's own 0.x version would fail those checks). 0.12.11 is the first
 * Ollama with everything Gantry's /api answers (JSON-schema `format`, `logprobs`/`top_logprobs`); raise it when Gantry
 * serves what a later release added.
 */
export const OLLAMA_API_VERSION = "0.12.11";
