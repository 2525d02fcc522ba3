import assert from "node:assert/strict";
import { it } from "node:test";
import { SharedDownloads, type DownloadTask } from "../../../server/hub/shared-downloads.ts";

function controllable() {
  let task: DownloadTask | undefined;
  const done = Promise.withResolvers<void>();
  let starts = 0;
  const start = (t: DownloadTask) => {
    starts++;
    task = t;
    t.signal.addEventListener("abort", () => done.reject(t.signal.reason));
    return done.promise;
  };
  return { start, done, task: () => task!, starts: () => starts };
}

it("runs one download for concurrent joiners, all of whom see its progress and result", async () => {
  const shared = new SharedDownloads();
  const d = controllable();
  const seen: number[][] = [[], []];
  const a = shared.join("k", d.start, { onProgress: (p) => seen[0]!.push(p.completed) });
  d.task().progress({ completed: 5, total: 10 });
  const b = shared.join("k", d.start, { onProgress: (p) => seen[1]!.push(p.completed) });
  d.task().progress({ completed: 10, total: 10 });
  d.done.resolve();
  await Promise.all([a, b]);
  assert.equal(d.starts(), 1);
  assert.deepEqual(
    seen,
    [
      [5, 10],
      [5, 10],
    ],
    "a late joiner first gets the latest progress",
  );
  assert.deepEqual(shared.keys(), []);
});

it("keeps the download going while a watcher remains, and cancels it when the last one leaves", async () => {
  const shared = new SharedDownloads();
  const d = controllable();
  const leaveA = new AbortController(),
    leaveB = new AbortController();
  const a = shared.join("k", d.start, { signal: leaveA.signal });
  const b = shared.join("k", d.start, { signal: leaveB.signal });
  leaveA.abort(new Error("a left"));
  await assert.rejects(a, /a left/);
  assert.equal(d.task().signal.aborted, false);
  leaveB.abort(new Error("b left"));
  await assert.rejects(b, /b left/);
  assert.equal(d.task().signal.aborted, true);
});

it("passes a failure to every watcher and starts afresh on the next join", async () => {
  const shared = new SharedDownloads();
  const d = controllable();
  const a = shared.join("k", d.start);
  const b = shared.join("k", d.start);
  d.done.reject(new Error("boom"));
  await assert.rejects(a, /boom/);
  await assert.rejects(b, /boom/);
  const again = controllable();
  const c = shared.join("k", again.start);
  again.done.resolve();
  await c;
  assert.equal(again.starts(), 1);
});
