// Test models, generated or downloaded once and cached outside the repo ($GANTRY_CACHE/test-models).
// TEMPORARY implementation shelling out to the reference generators; replaced by the project's own GGUF writer.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const cacheDir = (): string => path.join(process.env.GANTRY_CACHE ?? path.join(os.homedir(), ".cache", "gantry"), "test-models");

/** A tiny random llama (2 layers x 64, byte-level vocab, ChatML tokens). controlLogit -8 = end-of-generation practically never. */
export async function tinyModelPath(opts: { controlLogit?: number; seed?: number } = {}): Promise<string> {
  const cl = opts.controlLogit ?? -3, seed = opts.seed ?? 42;
  const out = path.join(cacheDir(), `tiny-cl${cl}-s${seed}.gguf`);
  if (!fs.existsSync(out)) {
    fs.mkdirSync(cacheDir(), { recursive: true });
    const tmp = `${out}.${process.pid}.tmp.gguf`;
    execFileSync(process.execPath, [path.resolve(import.meta.dirname, "../../../shared/reference/gguf/gen-tiny.js"), tmp, "--seed", String(seed), "--control-logit", String(cl)], { stdio: "ignore" });
    fs.renameSync(tmp, out);
  }
  return out;
}
