import assert from "node:assert/strict";
import { test } from "node:test";
import { tailLines } from "../../../../test/cluster/runtime/log-server.ts";

test("tailLines keeps the last n lines and the final newline", () => {
  assert.equal(tailLines("a\nb\nc\n", 2), "b\nc\n");
  assert.equal(tailLines("a\nb\nc", 2), "b\nc");
  assert.equal(tailLines("a\n", 5), "a\n");
  assert.equal(tailLines("a\nb\n", 0), "");
});
