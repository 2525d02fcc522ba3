import { test } from "node:test";
import assert from "node:assert/strict";
import { formatDuration, parseKeepAlive } from "../../../server/common/duration.ts";

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
];
for (const [input, want] of valid) {
  test(`parseKeepAlive(${JSON.stringify(input)}) = ${want}`, () => assert.equal(parseKeepAlive(input), want));
}
for (const bad of ["", "5 minutes", "m5", "5x", "forever", "1h-5m", Number.NaN, Number.POSITIVE_INFINITY]) {
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
