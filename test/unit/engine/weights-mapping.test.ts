import { test } from "node:test";
import assert from "node:assert/strict";
import { mapWeights } from "../../../server/engine/weights-mapping.ts";

const cpu = { gpu: false, supportsMmap: true } as const;
const cuda = { gpu: "cuda", supportsMmap: true } as const;

test("unset use_mmap: weights are read into memory on CPU and mapped with a GPU (Ollama's rule)", () => {
  assert.equal(mapWeights(undefined, cpu), false);
  assert.equal(mapWeights(undefined, cuda), true);
});

test("use_mmap decides when set", () => {
  assert.equal(mapWeights(true, cpu), true);
  assert.equal(mapWeights(false, cuda), false);
});

test("never mapped where the runtime cannot map files", () => {
  assert.equal(mapWeights(true, { gpu: false, supportsMmap: false }), false);
  assert.equal(mapWeights(undefined, { gpu: "metal", supportsMmap: false }), false);
});
