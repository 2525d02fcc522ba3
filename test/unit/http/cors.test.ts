import { test } from "node:test";
import assert from "node:assert/strict";
import { originAllowed } from "../../../server/http/cors.ts";

const cases: Array<[string, string[], boolean]> = [
  ["http://localhost:3000", [], true],
  ["http://127.0.0.1", [], true],
  ["https://[::1]:8443", [], true],
  ["app://desktop", [], true],
  ["https://evil.example", [], false],
  ["http://localhost.evil.example", [], false],
  ["https://chat.example.com", ["https://chat.example.com"], true],
  ["https://a.example.com", ["https://*.example.com"], true],
  ["https://example.org", ["https://*.example.com"], false],
  ["https://anything.test", ["*"], true],
];
for (const [origin, extra, want] of cases)
  test(`origin ${origin} with [${extra.join(",")}] → ${want}`, () => assert.equal(originAllowed(origin, extra), want));
