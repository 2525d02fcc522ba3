import { test } from "node:test";
import assert from "node:assert/strict";
import { schemaProblem, withDefinitionsAsDefs } from "../../../server/common/json-schema-check.ts";

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

test("constraints the grammar compiler would drop are reported with the keyword", () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ type: "string", pattern: "([" }, /^\$\.pattern: Invalid regular expression: \/\(\[\/: /],
    [{ type: "object", properties: { a: { enum: [] } } }, /^\$\.properties\.a\.enum is empty/],
    [{ $ref: "#/$defs/missing" }, /^\$\.\$ref: "#\/\$defs\/missing" points to no definition/],
    [{ $ref: "#/properties/a", properties: { a: {} } }, /^\$\.\$ref: .* is not supported/],
    [{ $ref: "#/definitions/b", definitions: { a: {} } }, /^\$\.\$ref: "#\/definitions\/b" points to no definition/],
    [{ type: [] }, /^\$\.type is empty/],
    [{ oneOf: [] }, /^\$\.oneOf is empty/],
  ];
  for (const [schema, want] of cases) assert.match(schemaProblem(schema) ?? "(none)", want, JSON.stringify(schema));
});

test("$refs resolve against the $defs of the schema and of every enclosing one", () => {
  const schema = {
    $defs: { name: { type: "string" } },
    type: "object",
    properties: {
      a: { $ref: "#/$defs/name" },
      b: { $defs: { inner: { type: "integer" } }, type: "array", items: { $ref: "#/$defs/inner" } },
      c: { $ref: "#/$defs/inner" },
    },
  };
  assert.equal(schemaProblem(schema), '$.properties.c.$ref: "#/$defs/inner" points to no definition');
  assert.equal(
    schemaProblem({ $defs: { node: { type: "object", properties: { next: { $ref: "#/$defs/node" } } } } }),
    null,
  );
  assert.equal(schemaProblem({ type: "string", pattern: "^[a-z\\_]+$" }), null, "the web's legacy escapes are valid");
});

test("the nesting depth is checked first, without recursion", () => {
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 20_000; i++) deep = { type: "object", properties: { a: deep } };
  assert.equal(schemaProblem(deep), "JSON schema nests deeper than 100 levels (the limit)");
});

test("draft-07 root definitions are read as $defs, as pydantic v1 and zod-to-json-schema write them", () => {
  const schema = {
    definitions: { color: { enum: ["red", "green"] }, pair: { type: "array", items: { $ref: "#/definitions/color" } } },
    type: "object",
    properties: {
      c: { $ref: "#/definitions/color" },
      p: { anyOf: [{ $ref: "#/definitions/pair" }, { type: "null" }] },
    },
    required: ["c", "p"],
  };
  assert.equal(schemaProblem(schema), null);
  assert.deepEqual(withDefinitionsAsDefs(schema), {
    $defs: { color: { enum: ["red", "green"] }, pair: { type: "array", items: { $ref: "#/$defs/color" } } },
    type: "object",
    properties: { c: { $ref: "#/$defs/color" }, p: { anyOf: [{ $ref: "#/$defs/pair" }, { type: "null" }] } },
    required: ["c", "p"],
  });
  assert.equal(schema.properties.c.$ref, "#/definitions/color", "the caller's schema is not changed");
  const noDefinitions = { $defs: { a: { type: "string" } }, $ref: "#/$defs/a" };
  assert.equal(withDefinitionsAsDefs(noDefinitions), noDefinitions);
});
