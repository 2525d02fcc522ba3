import { test } from "node:test";
import assert from "node:assert/strict";
import { schemaProblem } from "../../../server/engine/json-schema-check.ts";

test("usable schemas pass", () => {
  assert.equal(
    schemaProblem({
      type: "object",
      properties: { a: { type: ["string", "null"] }, b: { enum: [1, 2] } },
      required: ["a"],
    }),
    null,
  );
  assert.equal(schemaProblem({ type: "array", items: { type: "integer" } }), null);
  assert.equal(schemaProblem({ oneOf: [{ type: "string" }, { type: "number" }] }), null);
});

test("unknown types are reported with their path", () => {
  assert.equal(schemaProblem({ type: "no-such-type" }), '$.type: unknown type "no-such-type"');
  assert.match(schemaProblem({ type: "object", properties: { x: { type: "strin" } } })!, /\$\.properties\.x\.type/);
  assert.match(schemaProblem({ type: "array", items: { type: 3 } })!, /\$\.items\.type/);
});

test("malformed keywords are reported", () => {
  assert.match(schemaProblem([])!, /must be an object/);
  assert.match(schemaProblem({ enum: "red" })!, /enum must be an array/);
  assert.match(schemaProblem({ required: [1] })!, /required/);
  assert.match(schemaProblem({ anyOf: {} })!, /anyOf must be an array/);
});
