// The RAM prompt cache's bookkeeping (server/engine/prompt-cache.ts): longest-prefix lookup per scope, least recently
// used out within the byte bound, a history saved again replaces the shorter ones it extends. The states themselves
// are tested on the real model in test/integration/engine/prompt-cache-native.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import { MIN_CACHED_TOKENS, PromptCache } from "../../../server/engine/prompt-cache.ts";

const run = (first: number, n: number): Token[] => Array.from({ length: n }, (_, i) => (first + i) as Token);
const state = (bytes: number) => new Uint8Array(bytes);

test("finds the saved prompt sharing the longest prefix, in its own scope only", () => {
  const cache = new PromptCache(1000);
  const [model, other] = [{}, {}];
  const system = run(1, 40);
  cache.add(model, [...system, ...run(100, 40)], state(10));
  cache.add(model, [...system, ...run(200, 60)], state(10));
  cache.add(other, [...system, ...run(300, 90)], state(10));
  const { entry, length } = cache.match(model, [...system, ...run(200, 10), 7 as Token]);
  assert.equal(length, 50);
  assert.deepEqual(entry?.tokens.slice(40, 41), [200]);
  assert.equal(cache.match(model, run(5000, 50)).length, 0);
  assert.equal(cache.match({}, system).entry, undefined, "another scope sees nothing");
  cache.dropScope(other);
  assert.deepEqual([cache.size, cache.bytes], [2, 20]);
});

test("least recently used out, within the bound; a state larger than the cache is not kept", () => {
  const bytes: number[] = [];
  const cache = new PromptCache(100, (b) => bytes.push(b));
  const scope = {};
  cache.add(scope, run(1, 40), state(40));
  cache.add(scope, run(100, 40), state(40));
  cache.touch(cache.match(scope, run(1, 40)).entry!);
  cache.add(scope, run(200, 40), state(40));
  assert.equal(cache.match(scope, run(100, 40)).length, 0, "the least recently used went");
  assert.equal(cache.match(scope, run(1, 40)).length, 40);
  assert.equal(cache.add(scope, run(300, 40), state(101)), false);
  assert.deepEqual([cache.size, cache.bytes, bytes.at(-1)], [2, 80, 80]);
});

test("wants(): short histories and ones a saved prompt already covers are not saved again; a longer one replaces it", () => {
  const cache = new PromptCache(1000);
  const scope = {};
  const turn1 = run(1, 50),
    turn2 = [...turn1, ...run(500, 30)];
  assert.equal(cache.wants(scope, run(1, MIN_CACHED_TOKENS - 1)), false);
  assert.equal(cache.wants(scope, turn1), true);
  cache.add(scope, turn2, state(10));
  assert.equal(cache.wants(scope, turn1), false, "turn 2's state holds turn 1");
  cache.add(scope, [...turn2, ...run(900, 10)], state(10));
  assert.deepEqual([cache.size, cache.bytes], [1, 10], "turn 3's state replaced turn 2's");
  assert.equal(new PromptCache(0).wants(scope, turn1), false, "a cache of size 0 wants nothing");
});
