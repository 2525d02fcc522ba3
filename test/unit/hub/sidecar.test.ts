import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { it } from "node:test";
import { completedBytes, partsAreValid, planParts, readSidecar, writeSidecar } from "../../../server/hub/sidecar.ts";

it("plans contiguous parts covering the file", () => {
  assert.deepEqual(planParts(10, 3), [
    { start: 0, end: 4, done: 0 },
    { start: 4, end: 8, done: 0 },
    { start: 8, end: 10, done: 0 },
  ]);
  assert.deepEqual(planParts(5, 1), [{ start: 0, end: 5, done: 0 }]);
  assert.deepEqual(planParts(0, 4), [{ start: 0, end: 0, done: 0 }]);
  for (const [total, n] of [
    [1000, 4],
    [7, 16],
    [98362432, 4],
  ] as const)
    assert.ok(partsAreValid(planParts(total, n), total));
});

it("rejects parts that leave gaps or claim more than their length", () => {
  assert.equal(
    partsAreValid(
      [
        { start: 0, end: 4, done: 0 },
        { start: 5, end: 10, done: 0 },
      ],
      10,
    ),
    false,
  );
  assert.equal(
    partsAreValid(
      [
        { start: 0, end: 4, done: 5 },
        { start: 4, end: 10, done: 0 },
      ],
      10,
    ),
    false,
  );
  assert.equal(partsAreValid([{ start: 0, end: 4, done: 4 }], 10), false);
});

it("reads back a sidecar only for the same download", async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-sc-")), "x-partial.json");
  const digest = `sha256:${"a".repeat(64)}`;
  const parts = [
    { start: 0, end: 6, done: 6 },
    { start: 6, end: 10, done: 2 },
  ];
  await writeSidecar(file, { version: 1, url: "http://hub/x", digest, total: 10, parts });
  const back = await readSidecar(file, { digest, total: 10 });
  assert.equal(completedBytes(back!.parts), 8);
  assert.equal(await readSidecar(file, { digest, total: 11 }), null);
  assert.equal(await readSidecar(file, { digest: `sha256:${"b".repeat(64)}`, total: 10 }), null);
  fs.writeFileSync(file, "{not json");
  assert.equal(await readSidecar(file, { digest, total: 10 }), null);
});
