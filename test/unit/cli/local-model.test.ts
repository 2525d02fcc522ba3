import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { isGgufPath, modelNameForFile, resolveUserPath, sha256File } from "../../../server/cli/local-model.ts";

test("which references are local GGUF files", () => {
  for (const ref of ["./model.gguf", "../m/x.GGUF", "/abs/y.gguf", "~/z.gguf", "plain.gguf"])
    assert.equal(isGgufPath(ref), true, ref);
  for (const ref of [
    "tiny",
    "tiny:latest",
    "hf.co/org/repo:Q4_K_M",
    "hf.co/org/repo:Model-Q8_0.gguf",
    "huggingface.co/o/r:x.gguf",
  ]) {
    assert.equal(isGgufPath(ref), false, ref);
  }
});

test("resolveUserPath expands ~ and resolves against a base directory", () => {
  assert.equal(resolveUserPath("./m.gguf", "/work/dir", "/home/u"), "/work/dir/m.gguf");
  assert.equal(resolveUserPath("../m.gguf", "/work/dir", "/home/u"), "/work/m.gguf");
  assert.equal(resolveUserPath("/abs/m.gguf", "/work/dir", "/home/u"), "/abs/m.gguf");
  assert.equal(resolveUserPath("~/models/m.gguf", "/work/dir", "/home/u"), "/home/u/models/m.gguf");
  assert.equal(resolveUserPath("~", "/work", "/home/u"), "/home/u");
});

test("modelNameForFile derives a valid, lower-case model name", () => {
  const cases: [string, string][] = [
    ["/x/SmolLM2-135M-Instruct-Q4_1.gguf", "smollm2-135m-instruct-q4_1"],
    ["./My Model (v2).GGUF", "my-model-v2"],
    ["/x/.hidden.gguf", "hidden"],
    ["/x/llama..3.gguf", "llama.3"],
    ["/x/---.gguf", "model"],
    ["/x/ünïcode.gguf", "n-code"],
  ];
  for (const [file, want] of cases) assert.equal(modelNameForFile(file), want, file);
});

test("sha256File streams the file through sha256", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cli-"));
  const file = path.join(dir, "blob.bin");
  const data = crypto.randomBytes(300_000);
  fs.writeFileSync(file, data);
  assert.equal(await sha256File(file), `sha256:${crypto.createHash("sha256").update(data).digest("hex")}`);
  fs.rmSync(dir, { recursive: true });
});
