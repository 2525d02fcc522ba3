import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { bufferedDestination } from "../../../server/common/logger.ts";

test("the buffered destination writes every line, in order, to a file", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-log-"));
  try {
    const file = path.join(dir, "out.log");
    const out = bufferedDestination(file);
    const want = Array.from({ length: 20_000 }, (_, i) => `{"n":${i}}\n`).join("");
    for (const line of want.split(/(?<=\n)/)) out.write(line);
    out.flushSync();
    assert.equal(fs.readFileSync(file, "utf8"), want);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Runs a process that logs 120 000 lines through the buffered destination on its stdout and exits 20 ms after the first
 * 100 000, while its reader starts reading only after 300 ms (the pipe is full when it exits); gives the lines.
 */
async function linesFromExitingLogger(nonBlockingStdout: boolean): Promise<string[]> {
  const script = `import { bufferedDestination } from ${JSON.stringify(path.resolve("server/common/logger.ts"))};
    ${nonBlockingStdout ? "process.stdout; // node opens a pipe on fd 1 in non-blocking mode" : ""}
    const out = bufferedDestination(1);
    for (let i = 0; i < 100000; i++) out.write('{"n":' + i + '}\\n');
    setTimeout(() => {
      for (let i = 100000; i < 120000; i++) out.write('{"n":' + i + '}\\n');
      process.exit(0);
    }, 20);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.pause();
  await new Promise((r) => setTimeout(r, 300));
  let text = "";
  let errors = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (text += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (errors += d));
  child.stdout.resume();
  const [code] = (await once(child, "close")) as [number];
  assert.equal(code, 0, errors);
  return text.trimEnd().split("\n");
}

for (const nonBlocking of [false, true]) {
  test(
    `a process that logs a lot and exits at once: every line reaches a slow reader of its stdout, in order (${nonBlocking ? "non-blocking" : "blocking"} pipe)`,
    { timeout: 30_000 },
    async () => {
      const lines = await linesFromExitingLogger(nonBlocking);
      assert.equal(lines.length, 120_000);
      assert.ok(lines.every((l, i) => l === `{"n":${i}}`));
    },
  );
}
