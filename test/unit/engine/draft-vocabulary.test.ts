// A draft model must share the target's vocabulary: where two differ, in words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { vocabularyDifference } from "../../../server/engine/draft-model.ts";

test("vocabularyDifference: none for the same tokens, else the size or the first token that differs", () => {
  assert.equal(vocabularyDifference(["a", "b"], ["a", "b"]), undefined);
  assert.equal(vocabularyDifference(["a", "b"], ["a", "b", "c"]), "3 tokens, not 2");
  assert.equal(vocabularyDifference(["a", "b"], ["a", "x"]), 'token 1 is "x", not "b"');
});
