import assert from "node:assert/strict";
import { test } from "node:test";
import { requestIds } from "../../../server/gateway/1-dispatch/request-id.ts";

test("request ids: 32 hex characters, never repeated by a process, and another process's differ", () => {
  const next = requestIds();
  const seen = new Set<string>();
  for (let i = 0; i < 10_000; i++) {
    const id = next();
    assert.match(id, /^[0-9a-f]{32}$/);
    seen.add(id);
  }
  assert.equal(seen.size, 10_000);
  const other = requestIds()();
  assert.notEqual(other.slice(0, 16), [...seen][0]!.slice(0, 16), "the random half differs between processes");
});
