import assert from "node:assert/strict";
import { test } from "node:test";
import { formatBytes, formatEta, formatSpeed, formatTable, relativeTime, shortId } from "../../../server/cli/format.ts";

test("formatBytes uses decimal units with at most three significant digits", () => {
  const cases: [number, string][] = [
    [0, "0 B"],
    [999, "999 B"],
    [1000, "1 KB"],
    [1500, "1.5 KB"],
    [823_456, "823 KB"],
    [12_345_678, "12.3 MB"],
    [4_700_000_000, "4.7 GB"],
    [1_234_000_000_000, "1.23 TB"],
    [-1, "?"],
    [Number.NaN, "?"],
  ];
  for (const [n, want] of cases) assert.equal(formatBytes(n), want, `formatBytes(${n})`);
  assert.equal(formatSpeed(2_500_000), "2.5 MB/s");
});

test("formatEta shows seconds, minutes and hours", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [0.2, "1s"],
    [59, "59s"],
    [60, "1m00s"],
    [192, "3m12s"],
    [3600, "1h00m"],
    [3840, "1h04m"],
    [Infinity, "?"],
    [-5, "?"],
  ];
  for (const [s, want] of cases) assert.equal(formatEta(s), want, `formatEta(${s})`);
});

test("relativeTime reads like ollama list", () => {
  const now = new Date("2026-01-10T12:00:00Z");
  const ago = (ms: number) => relativeTime(new Date(now.getTime() - ms), now);
  assert.equal(ago(200), "Less than a second ago");
  assert.equal(ago(1000), "A second ago");
  assert.equal(ago(45_000), "45 seconds ago");
  assert.equal(ago(60_000), "A minute ago");
  assert.equal(ago(2 * 60_000 + 5000), "2 minutes ago");
  assert.equal(ago(3600_000), "An hour ago");
  assert.equal(ago(5 * 3600_000), "5 hours ago");
  assert.equal(ago(3 * 86_400_000), "3 days ago");
  assert.equal(ago(15 * 86_400_000), "2 weeks ago");
  assert.equal(ago(95 * 86_400_000), "3 months ago");
  assert.equal(ago(800 * 86_400_000), "2 years ago");
  assert.equal(relativeTime(new Date(now.getTime() + 4 * 60_000 + 30_000), now), "4 minutes from now");
});

test("formatTable pads columns to the widest cell and trims line ends", () => {
  const out = formatTable(
    ["NAME", "ID", "SIZE"],
    [
      ["tiny:latest", "abc", "804 KB"],
      ["a-much-longer-name:v2", "def012345678", "4.7 GB"],
    ],
  );
  assert.equal(
    out,
    "NAME                    ID             SIZE\n" +
      "tiny:latest             abc            804 KB\n" +
      "a-much-longer-name:v2   def012345678   4.7 GB\n",
  );
  assert.equal(formatTable(["NAME", "ID"], []), "NAME   ID\n");
});

test("shortId gives 12 hex of a digest in any spelling", () => {
  const hex = "19a97c781daa2e58bd9a217045024a0aa101ffeae025c5e8fc3d185cddcb94fe";
  assert.equal(shortId(hex), "19a97c781daa");
  assert.equal(shortId(`sha256:${hex}`), "19a97c781daa");
  assert.equal(shortId(`sha256-${hex}`), "19a97c781daa");
});
