// The webhook retry schedule: the default one covers a receiver that is down far longer than a minute, and the times
// computed are the ones BullMQ's own backoff makes from the same settings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Backoffs } from "bullmq";
import { deliveryAttemptTimes, deliveryBackoff } from "../../../server/gateway/queue/deliveries.ts";
import { QueueConfigSchema } from "../../../server/gateway/queue/config.ts";

const defaults = QueueConfigSchema.parse({ redisUrl: "redis://127.0.0.1:6379" }).webhooks;
const MINUTE = 60_000;

test("the default schedule: 10 attempts from 15 s, doubling, over two hours", () => {
  assert.deepEqual([defaults.attempts, defaults.backoffMs], [10, 15_000]);
  const times = deliveryAttemptTimes(defaults);
  assert.deepEqual(
    times.map((t) => t / 1000),
    [0, 15, 45, 105, 225, 465, 945, 1905, 3825, 7665],
  );
  // A receiver down for a minute from the first attempt gets the 4th (at 1 min 45 s); one down for an hour, the 9th.
  assert.equal(times.findIndex((t) => t >= MINUTE) + 1, 4);
  assert.equal(times.findIndex((t) => t >= 60 * MINUTE) + 1, 9);
  assert.ok(times.at(-1)! > 2 * 60 * MINUTE);
});

test("the schedule is BullMQ's: each wait is what its exponential backoff computes after that attempt", () => {
  for (const w of [defaults, { attempts: 6, backoffMs: 20 }, { attempts: 1, backoffMs: 1000 }]) {
    const times = deliveryAttemptTimes(w);
    assert.equal(times.length, w.attempts);
    for (let made = 1; made < w.attempts; made++)
      assert.equal(
        times[made]! - times[made - 1]!,
        Backoffs.calculate(deliveryBackoff(w), made, new Error("refused"), {} as never),
        `wait after attempt ${made} of ${JSON.stringify(w)}`,
      );
  }
});
