import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv } from "../../../server/common/config.ts";
import { BenchRoutingThinkSchema, thinkNote, thinkPauses } from "../../bench/routing-think.ts";

test("bench routing think time: none by default, fixed or exponential around the mean, the same for the same seed", () => {
  const none = parseEnv(BenchRoutingThinkSchema, {});
  assert.deepEqual(thinkPauses(none, 7, 6), [0, 0, 0, 0, 0, 0]);
  assert.equal(thinkNote(none), "no pause between turns");

  const fixed = parseEnv(BenchRoutingThinkSchema, { GANTRY_BENCH_THINK_MS: "3000", GANTRY_BENCH_THINK: "fixed" });
  assert.deepEqual(thinkPauses(fixed, 7, 3), [3000, 3000, 3000]);

  const exp = parseEnv(BenchRoutingThinkSchema, { GANTRY_BENCH_THINK_MS: "3000" });
  assert.equal(thinkNote(exp), "an exponential pause between turns, mean 3000 ms");
  assert.deepEqual(thinkPauses(exp, 7, 6), thinkPauses(exp, 7, 6));
  assert.notDeepEqual(thinkPauses(exp, 7, 6), thinkPauses(exp, 8, 6));
  const many = thinkPauses(exp, 11, 20_000);
  assert.ok(many.every((p) => Number.isInteger(p) && p >= 0));
  const mean = many.reduce((a, b) => a + b, 0) / many.length;
  assert.ok(Math.abs(mean - 3000) < 150, `mean ${mean}`);
  // An exponential's median is ln 2 × its mean: most pauses are shorter than the mean, a few much longer.
  const sorted = [...many].sort((a, b) => a - b);
  assert.ok(Math.abs(sorted[10_000]! - 3000 * Math.LN2) < 150, `median ${sorted[10_000]}`);

  assert.throws(() => parseEnv(BenchRoutingThinkSchema, { GANTRY_BENCH_THINK_MS: "-1" }), /GANTRY_BENCH_THINK_MS/);
  assert.throws(() => parseEnv(BenchRoutingThinkSchema, { GANTRY_BENCH_THINK: "poisson" }), /GANTRY_BENCH_THINK/);
});
