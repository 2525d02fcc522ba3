import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger, infoLineWriter } from "../../../server/common/logger.ts";

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
