import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { it } from "node:test";
import { BatchWriter } from "../../../server/hub/batch-writer.ts";

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bw-")), "f");

it("writes chunks in order at their offsets and reports monotonically growing written ends", async () => {
  const file = tempFile();
  const fh = await fs.promises.open(file, "w+");
  const ends: number[] = [];
  const w = new BatchWriter(fh, 10, (end) => ends.push(end), { batchBytes: 1000 });
  const chunks = Array.from({ length: 50 }, (_, i) => Buffer.alloc(97, i));
  for (const c of chunks) await w.push(c);
  await w.flush();
  await fh.close();
  const data = fs.readFileSync(file);
  assert.equal(data.length, 10 + 50 * 97);
  assert.deepEqual(data.subarray(10), Buffer.concat(chunks));
  assert.deepEqual(
    ends,
    [...ends].sort((a, b) => a - b),
  );
  assert.equal(ends.at(-1), 10 + 50 * 97);
  assert.ok(ends.length >= 4, "written in batches, not at the end only");
});

it("writes a batch that stops growing after the idle time, so progress shows data of a stalled link", async () => {
  const fh = await fs.promises.open(tempFile(), "w+");
  const ends: number[] = [];
  const w = new BatchWriter(fh, 0, (end) => ends.push(end), { batchBytes: 1 << 20, idleMs: 20 });
  await w.push(Buffer.alloc(500));
  // Written once the 20 ms idle time has passed and the write is done (no flush): waited for, however slow the disk.
  for (const until = Date.now() + 10_000; ends.length === 0 && Date.now() < until;) await sleep(10);
  assert.deepEqual(ends, [500]);
  await w.flush();
  await fh.close();
});
