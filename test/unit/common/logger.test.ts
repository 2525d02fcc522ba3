import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { bufferedDestination, createLogger, infoLineWriter } from "../../../server/common/logger.ts";

function capture() {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(chunk.toString());
      cb();
    },
  });
  return { out, destination: destination as unknown as NodeJS.WritableStream & { write(s: string): boolean } };
}

test("the hand-built info line has pino's format (level, time, bindings, fields, msg)", () => {
  const c = capture();
  const logger = createLogger({ name: "gantry-gateway", destination: c.destination }).child({ replica: 1 });
  logger.info({ requestId: "r1", status: 200 }, "request");
  infoLineWriter(logger)(`"requestId":"r1","status":200`, "request");
  const [a, b] = c.out.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(Object.keys(b!), Object.keys(a!));
  assert.deepEqual({ ...b, time: 0 }, { ...a, time: 0 });
  assert.ok(c.out[1]!.endsWith("}\n"));
});

test("nothing is written when the level is above info", () => {
  const c = capture();
  infoLineWriter(createLogger({ level: "warn", destination: c.destination }))(`"a":1`, "request");
  assert.deepEqual(c.out, []);
});

test("the buffered destination writes every line, in order, to a file and through a pipe at exit", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-log-"));
  try {
    const file = path.join(dir, "out.log");
    const out = bufferedDestination(file);
    const want = Array.from({ length: 20_000 }, (_, i) => `{"n":${i}}\n`).join("");
    for (const line of want.split(/(?<=\n)/)) out.write(line);
    out.flushSync();
    await new Promise((r) => setTimeout(r, 300)); // an asynchronous block may still be in flight
    assert.equal(fs.readFileSync(file, "utf8"), want);
    // A process that logs a lot and exits at once: all of it reaches the reader of its stdout.
    const script = `import { bufferedDestination } from ${JSON.stringify(path.resolve("server/common/logger.ts"))};
      const out = bufferedDestination(1);
      for (let i = 0; i < 100000; i++) out.write('{"n":' + i + '}\\n');
      setTimeout(() => process.exit(0), 50);`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 100_000);
    assert.ok(lines.every((l, i) => l === `{"n":${i}}`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
