// Packing rerank pairs into decodes: input order, the token and pair limits, long and empty pairs left out.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Token } from "node-llama-cpp";
import { packPairs } from "../../../server/engine/ranker.ts";

const pairs = (...lengths: number[]): Token[][] => lengths.map((n) => Array.from({ length: n }, () => 1 as Token));

test("pairs are grouped in input order within the token and pair limits", () => {
  assert.deepEqual(packPairs(pairs(4, 4, 2, 5, 1), 10, 8), [
    [0, 1, 2],
    [3, 4],
  ]);
  assert.deepEqual(packPairs(pairs(1, 1, 1, 1, 1), 10, 2), [[0, 1], [2, 3], [4]]);
  assert.deepEqual(packPairs(pairs(10, 10), 10, 8), [[0], [1]], "a pair that fills a decode alone");
});

test("pairs longer than a decode and empty pairs are left out", () => {
  assert.deepEqual(packPairs(pairs(3, 11, 0, 3), 10, 8), [[0, 3]]);
  assert.deepEqual(packPairs([], 10, 8), []);
});
