import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalJson, stableHash } from "../../../../operator/render/hash.ts";

test("canonicalJson sorts object keys at every depth and keeps array order", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  );
  assert.equal(canonicalJson([2, 1]), "[2,1]");
  assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
});

test("canonicalJson drops undefined properties, as JSON does", () => {
  assert.equal(canonicalJson({ a: 1, b: undefined }), canonicalJson({ a: 1 }));
  assert.equal(canonicalJson({ a: undefined }), "{}");
  assert.equal(canonicalJson({ s: 'x"y', n: 1.5, t: true }), JSON.stringify({ n: 1.5, s: 'x"y', t: true }));
});

test("stableHash is a short hex digest independent of key order", () => {
  const h = stableHash({ a: 1, b: [1, 2], c: { x: "y" } });
  assert.match(h, /^[0-9a-f]{16}$/);
  assert.equal(stableHash({ c: { x: "y" }, b: [1, 2], a: 1, d: undefined }), h);
  // rows: a value that must hash differently from h
  for (const other of [
    { a: 2, b: [1, 2], c: { x: "y" } },
    { a: 1, b: [2, 1], c: { x: "y" } },
    { a: 1, b: [1, 2], c: { x: "z" } },
    { a: "1", b: [1, 2], c: { x: "y" } },
  ]) {
    assert.notEqual(stableHash(other), h, JSON.stringify(other));
  }
});
