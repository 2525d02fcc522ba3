import assert from "node:assert/strict";
import { test } from "node:test";
import { llamaSlotsFromEnv } from "../../bench/llama-cpp/targets.ts";

test("llama-server slot mode: its own LRU choice by default, pinned on request, anything else is an error", () => {
  assert.equal(llamaSlotsFromEnv({}), "lru");
  assert.equal(llamaSlotsFromEnv({ GANTRY_BENCH_LLAMA_SLOTS: "lru" }), "lru");
  assert.equal(llamaSlotsFromEnv({ GANTRY_BENCH_LLAMA_SLOTS: "pinned" }), "pinned");
  assert.throws(
    () => llamaSlotsFromEnv({ GANTRY_BENCH_LLAMA_SLOTS: "fixed" }),
    /GANTRY_BENCH_LLAMA_SLOTS must be "lru" or "pinned"/,
  );
});
