// Prompt-lookup drafts: the continuation of the latest earlier occurrence of the last n-gram.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ngramDraft } from "../../../server/engine/ngram-draft.ts";

test("drafts what followed the latest earlier occurrence of the last tokens, up to max", () => {
  // ... 1 2 3 [4 5 6 7] ... 1 2 3 → 4 5 6
  assert.deepEqual(ngramDraft([9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3], 3), [4, 5, 6]);
  // The latest occurrence wins.
  assert.deepEqual(ngramDraft([1, 2, 3, 1, 2, 4, 1, 2], 1), [4]);
  // A draft never runs past the history's end.
  assert.deepEqual(ngramDraft([5, 6, 7, 5, 6], 8), [7, 5, 6]);
});

test("no draft without a recurring n-gram of at least two tokens, or with max 0", () => {
  assert.deepEqual(ngramDraft([1, 2, 3, 4, 5], 4), []);
  assert.deepEqual(ngramDraft([1, 2, 1], 4), [], "a single recurring token is not enough");
  assert.deepEqual(ngramDraft([1, 2, 1, 2], 0), []);
  assert.deepEqual(ngramDraft([], 4), []);
});

test("a longer match is preferred over a later shorter one", () => {
  // The trigram 7 8 9 occurred early (followed by 1); the bigram 8 9 occurs later (followed by 2).
  assert.deepEqual(ngramDraft([7, 8, 9, 1, 0, 8, 9, 2, 7, 8, 9], 1), [1]);
});
