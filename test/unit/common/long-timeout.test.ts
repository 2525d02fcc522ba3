import { test, mock } from "node:test";
import assert from "node:assert/strict";
import { MAX_TIMER_MS, setLongTimeout } from "../../../server/common/long-timeout.ts";

test("a timeout past Node's 24.8-day limit fires when due, not at once", () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
  try {
    let fired = 0;
    const thirtyDays = 30 * 86_400_000;
    assert.ok(thirtyDays > MAX_TIMER_MS);
    setLongTimeout(() => fired++, thirtyDays);
    mock.timers.tick(1);
    assert.equal(fired, 0, "not at once");
    mock.timers.tick(MAX_TIMER_MS);
    assert.equal(fired, 0, "not after the first step");
    mock.timers.tick(thirtyDays - MAX_TIMER_MS - 2);
    assert.equal(fired, 0, "not a millisecond early");
    mock.timers.tick(1);
    assert.equal(fired, 1);
  } finally {
    mock.timers.reset();
  }
});

test("clear stops it, in any step", () => {
  mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
  try {
    let fired = 0;
    const t = setLongTimeout(() => fired++, 3 * MAX_TIMER_MS);
    mock.timers.tick(MAX_TIMER_MS + 5);
    t.clear();
    mock.timers.tick(3 * MAX_TIMER_MS);
    assert.equal(fired, 0);
    const short = setLongTimeout(() => fired++, 10);
    short.clear();
    mock.timers.tick(20);
    assert.equal(fired, 0);
  } finally {
    mock.timers.reset();
  }
});
