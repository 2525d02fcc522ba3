import assert from "node:assert/strict";
import { test } from "node:test";
import { untilText } from "../../../../server/cli/commands/ps.ts";

test("UNTIL reads Forever, Stopping... or a relative time", () => {
  const now = new Date("2026-01-10T12:00:00Z");
  assert.equal(untilText({ expires_at: "9999-12-31T23:59:59Z" }, now), "Forever");
  assert.equal(untilText({ expires_at: "2026-01-10T11:59:59Z" }, now), "Stopping...");
  assert.equal(untilText({ expires_at: "2026-01-10T12:04:30Z" }, now), "4 minutes from now");
  assert.equal(untilText({ expires_at: "2026-01-10T13:00:00Z" }, now), "An hour from now");
});
