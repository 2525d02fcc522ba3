import { test } from "node:test";
import assert from "node:assert/strict";
import { formatDuration, MAX_KEEP_ALIVE_MS, parseKeepAlive } from "../../../server/common/duration.ts";

const valid: Array<[string | number, number | null]> = [
  ["5m", 300_000],
  ["1h", 3_600_000],
  ["1h30m", 5_400_000],
  ["30s", 30_000],
  ["300ms", 300],
  ["1.5s", 1500],
  ["0", 0],
  [0, 0],
  [60, 60_000],
  ["60", 60_000],
  [2.5, 2500],
  ["-1", null],
  [-1, null],
  ["-5m", null],
  ["-1s", null],
  [" 10m ", 600_000],
  // Beyond a Node timer's 24.8 days: kept as asked (loaded-model.ts re-arms its timer), clamped at Go's longest.
  ["720h", 2_592_000_000],
  [3_000_000, 3_000_000_000],
  [1e300, MAX_KEEP_ALIVE_MS],
  [Number.POSITIVE_INFINITY, MAX_KEEP_ALIVE_MS],
  ["99999999999999h", MAX_KEEP_ALIVE_MS],
  [Number.NEGATIVE_INFINITY, null],
];
for (const [input, want] of valid) {
  test(`parseKeepAlive(${JSON.stringify(input)}) = ${want}`, () => assert.equal(parseKeepAlive(input), want));
}
for (const bad of ["", "5 minutes", "m5", "5x", "forever", "1h-5m", Number.NaN]) {
  test(`parseKeepAlive rejects ${JSON.stringify(bad)}`, () =>
    assert.throws(() => parseKeepAlive(bad), /invalid duration/));
}
test("formatDuration", () => {
  assert.equal(formatDuration(null), "forever");
  assert.equal(formatDuration(300_000), "5m");
  assert.equal(formatDuration(7_200_000), "2h");
  assert.equal(formatDuration(45_000), "45s");
  assert.equal(formatDuration(250), "250ms");
});
