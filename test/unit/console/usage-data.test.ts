import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bucketTimes,
  perBucket,
  perGroup,
  usageCsv,
  type UsageRow,
} from "../../../server/browser-console/usage-data.ts";

const row = (hour: string, app: string, keyId: string, requests: number): UsageRow => ({
  hour,
  app,
  keyId,
  requests,
  errors: 0,
  promptTokens: requests * 10,
  completionTokens: requests * 2,
  durationMs: 1,
});

const rows = [
  row("2026-11-26T22:00:00.000Z", "chat", "k1", 1),
  row("2026-11-27T01:00:00.000Z", "chat", "k1", 2),
  row("2026-11-27T01:00:00.000Z", "code", "=cmd|x", 3),
];

test("buckets cover the range, quiet ones as zero; hours fold into days", () => {
  const from = Date.parse("2026-11-26T22:30:00Z"),
    to = Date.parse("2026-11-27T02:00:00Z");
  const hours = bucketTimes(from, to, "hour");
  assert.equal(hours.length, 4);
  assert.deepEqual(
    perBucket(rows, hours, "hour").map((t) => t.requests),
    [1, 0, 0, 5],
  );
  const days = bucketTimes(from, to, "day");
  assert.deepEqual(
    perBucket(rows, days, "day").map((t) => t.requests),
    [1, 5],
  );
  assert.deepEqual(
    perGroup(rows, "app").map(([a, t]) => [a, t.requests]),
    [
      ["chat", 3],
      ["code", 3],
    ],
  );
});

test("the CSV has one line per bucket, app and key, and no cell a spreadsheet would run as a formula", () => {
  const csv = usageCsv(rows, "day");
  assert.equal(
    csv,
    "day,app,key_id,requests,errors,prompt_tokens,completion_tokens\n" +
      "2026-11-26T00:00:00.000Z,chat,k1,1,0,10,2\n" +
      "2026-11-27T00:00:00.000Z,chat,k1,2,0,20,4\n" +
      "2026-11-27T00:00:00.000Z,code,'=cmd|x,3,0,30,6\n",
  );
});
