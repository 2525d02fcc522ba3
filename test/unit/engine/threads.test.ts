import { test } from "node:test";
import assert from "node:assert/strict";
import { countPhysicalCores, physicalCores, resolveThreads } from "../../../server/engine/threads.ts";

const cpu = (socket: number, core: number) => `processor\t: x\nphysical id\t: ${socket}\ncore id\t\t: ${core}\n`;

test("hyper-threads of one core count once", () => {
  const info = [cpu(0, 0), cpu(0, 1), cpu(0, 0), cpu(0, 1)].join("\n");
  assert.equal(countPhysicalCores(info), 2);
});

test("the same core id on two sockets counts twice", () => {
  assert.equal(countPhysicalCores([cpu(0, 0), cpu(1, 0)].join("\n")), 2);
});

test("cpuinfo without core ids yields 0 (caller falls back)", () => {
  assert.equal(countPhysicalCores("processor\t: 0\nmodel name\t: arm\n"), 0);
});

test("0 threads resolves to the physical core count; explicit values are kept", () => {
  assert.equal(resolveThreads(3), 3);
  assert.equal(resolveThreads(0), physicalCores());
  assert.ok(physicalCores() >= 1);
});
