// The benchmark tables' statistics: spreads and the per-round (paired) ratio of two servers measured back to back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { median, pairedRatio, spread } from "../../bench/table.ts";

test("median and spread of measurements", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(spread([12.5, 10, 200]), "10.0 / 12.5 / 200");
});

test("the paired ratio is the median of each round's own ratio, with the rounds won", () => {
  // Rounds' own ratios 1.02, 0.73, 1.03; the ratio of the medians would read 0.91 (50 ÷ 55).
  assert.equal(pairedRatio([50, 40, 60], [49, 55, 58]), "1.02 (2/3)");
  assert.equal(
    pairedRatio([100, 120], [110, 100], true),
    "1.05 (1/2)",
    "lower is better: a round is won at a ratio ≤ 1",
  );
  assert.equal(pairedRatio([1, Number.NaN], [1, 2]), "1.00 (1/1)", "rounds without a measurement are left out");
  assert.equal(pairedRatio([], []), "-");
});
