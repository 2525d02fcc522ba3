import assert from "node:assert/strict";
import { test } from "node:test";
import { processorText, untilText } from "../../../../server/cli/commands/ps.ts";

test("UNTIL reads Forever, Stopping... or a relative time", () => {
  const now = new Date("2026-01-10T12:00:00Z");
  assert.equal(untilText({ expires_at: "9999-12-31T23:59:59Z" }, now), "Forever");
  assert.equal(untilText({ expires_at: "2026-01-10T11:59:59Z" }, now), "Stopping...");
  assert.equal(untilText({ expires_at: "2026-01-10T12:04:30Z" }, now), "4 minutes from now");
  assert.equal(untilText({ expires_at: "2026-01-10T13:00:00Z" }, now), "An hour from now");
});

test("PROCESSOR is the split of the model's size between the CPU and the GPU, as Ollama prints it", () => {
  const gb = 1_000_000_000;
  const cases: Array<{ size: number; size_vram: number; want: string }> = [
    { size: 2 * gb, size_vram: 0, want: "100% CPU" },
    { size: 2 * gb, size_vram: 2 * gb, want: "100% GPU" },
    { size: 2 * gb, size_vram: gb, want: "50%/50% CPU/GPU" },
    { size: 3 * gb, size_vram: 2 * gb, want: "33%/67% CPU/GPU" },
    { size: gb, size_vram: 2 * gb, want: "Unknown" },
  ];
  for (const c of cases) assert.equal(processorText(c), c.want, JSON.stringify(c));
});
