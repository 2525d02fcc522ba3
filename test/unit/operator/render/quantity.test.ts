import assert from "node:assert/strict";
import { test } from "node:test";
import { quantityString, quantityValue, sameQuantity } from "../../../../operator/render/quantity.ts";

test("quantityValue reads every suffix form", () => {
  const cases: [string | number, number][] = [
    ["1Gi", 2 ** 30],
    ["1024Mi", 2 ** 30],
    ["1Ki", 1024],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["2Ti", 2 * 2 ** 40],
    ["500m", 0.5],
    ["100n", 1e-7],
    ["1k", 1000],
    ["1M", 1e6],
    ["1G", 1e9],
    ["2", 2],
    ["0", 0],
    [3, 3],
    ["1e3", 1000],
    ["1E3", 1000],
    ["5e-1", 0.5],
    ["1.5", 1.5],
    [".5", 0.5],
    ["+2", 2],
    [" 4 ", 4],
  ];
  for (const [q, want] of cases) {
    const got = quantityValue(q);
    assert.ok(
      got !== undefined && Math.abs(got - want) <= 1e-12 * Math.max(1, want),
      `${JSON.stringify(q)}: got ${got}, want ${want}`,
    );
  }
});

test("quantityValue returns undefined for text that is not a quantity", () => {
  for (const q of ["", "Gi", "1GB", "1K", "1 Gi", "abc", "1..2", "1e"])
    assert.equal(quantityValue(q), undefined, JSON.stringify(q));
});

test("sameQuantity compares by value, not spelling", () => {
  const cases: [string | number, string | number, boolean][] = [
    ["1", "1000m", true],
    ["1Gi", "1024Mi", true],
    ["1Gi", "1G", false],
    ["1k", "1000", true],
    ["0.1", "100m", true],
    ["2", 2, true],
    ["20Gi", "21474836480", true],
    ["500m", "0.5", true],
    ["1", "2", false],
    ["1M", "1Mi", false],
    ["bad", "bad", true],
    ["bad", "1", false],
  ];
  for (const [a, b, want] of cases) {
    assert.equal(sameQuantity(a, b), want, `${a} vs ${b}`);
    assert.equal(sameQuantity(b, a), want, `${b} vs ${a}`);
  }
});

test("quantityString writes integers as decimal text and keeps strings", () => {
  assert.equal(quantityString(4), "4");
  assert.equal(quantityString("16Gi"), "16Gi");
});
