import assert from "node:assert/strict";
import { test } from "node:test";
import { stepTimeOf, stepTimeTable } from "../../bench/llama-cpp/step-time.ts";
import { counterTotal, gantryCounters } from "../../bench/llama-cpp/targets.ts";

const metrics = (steps: number, decode: number, sampling: number, other: number, pipelined: number, jsBusy = 0) =>
  [
    "# HELP gantry_decode_steps_total Batched decode steps",
    "# TYPE gantry_decode_steps_total counter",
    `gantry_decode_steps_total{model="bench:latest"} ${steps}`,
    `gantry_decode_steps_pipelined_total{model="bench:latest"} ${pipelined}`,
    `gantry_decode_seconds_total{model="bench:latest",call="prompt"} 0.25`,
    `gantry_decode_seconds_total{model="bench:latest",call="generation"} ${decode - 0.25}`,
    `gantry_decode_calls_total{model="bench:latest",call="prompt"} 1`,
    `gantry_decode_calls_total{model="bench:latest",call="generation"} ${steps - 1}`,
    `gantry_decode_js_busy_seconds_total{model="bench:latest"} ${jsBusy}`,
    `gantry_decode_idle_seconds_total{model="bench:latest",part="sampling"} ${sampling}`,
    `gantry_decode_idle_seconds_total{model="bench:latest",part="other"} ${other}`,
  ].join("\n");

test("counterTotal: all label sets, or those with one label", () => {
  const text = metrics(10, 0.5, 0.25, 0.125, 9);
  assert.equal(counterTotal(text, "gantry_decode_idle_seconds_total"), 0.375);
  assert.equal(counterTotal(text, "gantry_decode_idle_seconds_total", 'part="other"'), 0.125);
  assert.equal(counterTotal(text, "gantry_decode_idle_seconds_total", 'part="none"'), 0);
  assert.equal(counterTotal(text, "gantry_decode_steps_total"), 10);
});

test("a run's time per step: the counters' differences over its steps; none for llama-server's counters", () => {
  const before = gantryCounters(metrics(10, 0.5, 0.25, 0.125, 9));
  const after = gantryCounters(metrics(138, 1.78, 0.506, 0.637, 136, 0.384));
  const t = stepTimeOf(before, after)!;
  assert.equal(t.steps, 128);
  assert.equal(t.decodeMs.toFixed(3), "10.000");
  assert.equal(t.generationDecodeMs.toFixed(3), "10.000", "the prompts' calls left out (the same before and after)");
  assert.equal(t.jsBusyMs.toFixed(3), "3.000");
  assert.equal(t.idleMs.toFixed(3), "6.000");
  assert.equal(t.samplingMs.toFixed(3), "2.000");
  assert.equal(t.pipelinedShare.toFixed(4), "0.9922");
  assert.equal(stepTimeOf({ steps: 1 }, { steps: 129 }), undefined);
  assert.equal(stepTimeOf(before, before), undefined, "no steps, no figures");
});

test("the table: medians over the rounds, and the ceiling's step time at the run's stream count", () => {
  const time = (decodeMs: number, idleMs: number) => ({
    steps: 128,
    decodeMs,
    generationDecodeMs: decodeMs - 1,
    jsBusyMs: 3,
    idleMs,
    samplingMs: 2,
    pipelinedShare: 1,
  });
  const rows = [
    { model: "bench-8b", run: "32 × 128 tokens", streams: 32, times: [time(10, 6), time(12, 8), time(11, 7)] },
    { model: "bench-8b", run: "3 × 128 tokens", streams: 3, times: [] },
  ];
  const t = stepTimeTable(rows, 3, new Map([["bench-8b", [{ pl: 32, pp: 128, tg: 128, speedTg: 3200 }]]]));
  assert.deepEqual(t.rows[0], [
    "bench-8b",
    "32 × 128 tokens",
    "128",
    "11.00",
    "10.00",
    "3.00",
    "7.00",
    "2.00",
    "5.00",
    "18.00",
    "100%",
    "10.00",
    "1.00",
  ]);
  assert.deepEqual(t.rows[1], ["bench-8b", "3 × 128 tokens", ...Array<string>(11).fill("-")]);
  assert.equal(stepTimeTable(rows, 3).header.length, 11, "no ceiling columns without a ceiling");
});
