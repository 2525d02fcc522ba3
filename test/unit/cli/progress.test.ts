import assert from "node:assert/strict";
import { test } from "node:test";
import { ProgressDisplay, renderBar, SpeedMeter, statusLabel } from "../../../server/cli/progress.ts";

const DIGEST = "sha256:6340dc3229b0a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901234567890";

test("renderBar shows percent, a proportional bar, bytes, speed and ETA", () => {
  const line = renderBar(
    { label: "pulling 6340dc3229b0", completed: 1_000_000_000, total: 4_000_000_000, speed: 10_000_000 },
    20,
  );
  assert.equal(line, "pulling 6340dc3229b0:  25% ▕█████               ▏ 1 GB/4 GB  10 MB/s  5m00s");
});

test("renderBar of a finished download shows the total only", () => {
  const line = renderBar({ label: "pulling x", completed: 2_000_000, total: 2_000_000, speed: 5 }, 10);
  assert.equal(line, "pulling x: 100% ▕██████████▏ 2 MB");
});

test("renderBar without a known speed leaves out speed and ETA, and clamps overshoot", () => {
  assert.equal(renderBar({ label: "p", completed: 0, total: 100, speed: null }, 4), "p:   0% ▕    ▏ 0 B/100 B");
  assert.equal(renderBar({ label: "p", completed: 150, total: 100, speed: null }, 4), "p: 100% ▕████▏ 100 B");
});

test("statusLabel shortens digests to 12 hex", () => {
  assert.equal(
    statusLabel({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 10, completed: 1 }),
    "pulling 6340dc3229b0",
  );
  assert.equal(statusLabel({ status: "downloading", digest: DIGEST, total: 10 }), "downloading 6340dc3229b0");
  assert.equal(statusLabel({ status: "verifying sha256 digest" }), "verifying sha256 digest");
  assert.equal(
    statusLabel({ status: "pulling 6340dc3229b0", digest: DIGEST, total: 10 }),
    "pulling 6340dc3229b0",
    "already short",
  );
});

test("SpeedMeter measures over a sliding window", () => {
  const m = new SpeedMeter(1000);
  assert.equal(m.speed(), null);
  m.add(0, 0);
  assert.equal(m.speed(), null);
  m.add(500, 500);
  assert.equal(m.speed(), 1000);
  m.add(3000, 500); // a stall: the old fast samples leave the window
  m.add(3500, 500);
  assert.equal(m.speed(), 0);
});

function collect(isTTY: boolean, logEveryMs?: number) {
  let text = "";
  let t = 0;
  const display = new ProgressDisplay(
    {
      write: (s) => {
        text += s;
      },
      isTTY,
    },
    () => t,
    logEveryMs === undefined ? {} : { logEveryMs },
  );
  return {
    display,
    text: () => text,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

test("on a non-terminal each status is printed once and a download twice (start and done), never per chunk", () => {
  const { display, text, advance } = collect(false);
  display.update({ status: "pulling manifest" });
  for (let done = 0; done <= 100; done += 10) {
    advance(100);
    display.update({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 100, completed: done });
  }
  display.update({ status: "verifying sha256 digest" });
  display.update({ status: "writing manifest" });
  display.update({ status: "success" });
  const lines = text().trimEnd().split("\n");
  assert.equal(lines.length, 6, text());
  assert.equal(lines[0], "pulling manifest");
  assert.ok(lines[1]!.startsWith("pulling 6340dc3229b0:   0% "), lines[1]);
  assert.match(lines[2]!, /^pulling 6340dc3229b0: 100% .* 100 B$/);
  assert.deepEqual(lines.slice(3), ["verifying sha256 digest", "writing manifest", "success"]);
  assert.ok(!text().includes("\x1b"), "no escape codes outside a terminal");
});

test("with logEveryMs (a pod's log) a moving download also gets a line at most that often", () => {
  const { display, text, advance } = collect(false, 2000);
  for (let done = 0; done <= 100; done += 10) {
    display.update({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 100, completed: done });
    advance(500); // 10 chunks over 5 s: the start, two lines 2 s apart, and the end
  }
  const lines = text().trimEnd().split("\n");
  assert.deepEqual(
    lines.map((l) => /(\d+)%/.exec(l)?.[1]),
    ["0", "40", "80", "100"],
    text(),
  );
});

test("on a terminal bars are redrawn in place and updates are throttled", () => {
  const { display, text, advance } = collect(true);
  display.update({ status: "pulling manifest" });
  display.update({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 1000, completed: 0 });
  const before = text().length;
  advance(10);
  display.update({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 1000, completed: 10 });
  assert.equal(text().length, before, "a redraw 10 ms after the last one is skipped");
  advance(1000);
  display.update({ status: `pulling ${DIGEST}`, digest: DIGEST, total: 1000, completed: 500 });
  const frame = text().slice(before);
  assert.ok(frame.startsWith("\x1b[2A\r"), `moves up over the two drawn lines: ${JSON.stringify(frame.slice(0, 10))}`);
  assert.ok(frame.includes("pulling 6340dc3229b0:  50% ") && frame.includes(" 500 B/1 KB  495 B/s  2s"), frame); // 500 bytes in 1010 ms
  display.update({ status: "success" });
  display.finish();
  assert.ok(text().endsWith("\x1b[2Ksuccess\n"), JSON.stringify(text().slice(-40)));
});
