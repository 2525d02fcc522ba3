// The route table's own consistency (its shapes agree with the paths' APIs, every streaming route has its keep-alive)
// and the body's depth check before parsing, against the check on the parsed value.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { test } from "node:test";
import { nestsDeeperThan, textNestsDeeperThan } from "../../../server/common/json-depth.ts";
import { shapeOf } from "../../../server/gateway/1-dispatch/target.ts";
import { prefixKey } from "../../../server/gateway/3-route/prefix-key.ts";
import { parseBody } from "../../../server/gateway/3-route/request-body.ts";
import { API_ROUTES, apiRoute, MAX_BODY_DEPTH } from "../../../server/gateway/routes.ts";

test("the route table: one entry per path, shapes as the path's API, keep-alive for every route that streams", () => {
  assert.equal(new Set(API_ROUTES.map((r) => r.path)).size, API_ROUTES.length);
  for (const r of API_ROUTES) {
    assert.equal(r.shape, shapeOf(r.path), r.path);
    assert.equal(r.body, r.methods.includes("POST") ? "json" : "none", r.path);
    if (r.stream?.kind === "ndjson")
      assert.ok(r.ndjsonKeepAlive, `${r.path} streams NDJSON: it needs its keep-alive line`);
    if (r.addsStreamUsage) assert.equal(r.stream?.kind, "sse", r.path);
    if (r.queueable) assert.ok(r.methods.includes("POST"), r.path);
  }
  assert.equal(apiRoute("/v1/models/tiny")?.path, "/v1/models/");
  assert.equal(apiRoute("/v1/models/"), undefined);
  assert.equal(apiRoute("/v1/chat/completions/x"), undefined);
});

test("a body's depth is measured before it is parsed, as the parsed value's would be", () => {
  const deep = (n: number) => Buffer.from(`{"a":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`);
  assert.equal(textNestsDeeperThan(deep(MAX_BODY_DEPTH), MAX_BODY_DEPTH), false);
  assert.equal(textNestsDeeperThan(deep(MAX_BODY_DEPTH + 1), MAX_BODY_DEPTH), true);
  assert.equal(parseBody(deep(100_000)), "too-deep");
  // Brackets inside strings (escaped quotes too) do not count.
  const inString = Buffer.from(JSON.stringify({ s: `\\"${"[".repeat(500)}`, t: "{".repeat(500) }));
  assert.equal(textNestsDeeperThan(inString, 10), false);
  const atoms = ["1", '"[\\"{"', "null", '"]"'];
  const gen = (d: number): string =>
    d === 0 || randomInt(4) === 0
      ? atoms[randomInt(atoms.length)]!
      : randomInt(2)
        ? `[${Array.from({ length: 1 + randomInt(3) }, () => gen(d - 1)).join(",")}]`
        : `{${Array.from({ length: 1 + randomInt(3) }, (_, i) => `"k${i}":${gen(d - 1)}`).join(",")}}`;
  for (let i = 0; i < 500; i++) {
    const text = gen(1 + randomInt(12));
    const limit = randomInt(10);
    assert.equal(textNestsDeeperThan(Buffer.from(text), limit), nestsDeeperThan(JSON.parse(text), limit), text);
  }
});

test("every route with PrefixHash fields keys a conversation of its API; a client's key wins on each", () => {
  const user = [{ role: "user", content: "hi" }];
  const conversations: Record<string, Record<string, unknown>> = {
    "/v1/chat/completions": { model: "m", messages: user },
    "/v1/completions": { model: "m", prompt: "hi" },
    "/v1/responses": { model: "m", instructions: "be brief", input: "hi" },
    "/v1/messages": { model: "m", system: "be brief", messages: user },
    "/api/chat": { model: "m", messages: user },
    "/api/generate": { model: "m", system: "be brief", prompt: "hi" },
  };
  const keyed = API_ROUTES.filter((r) => r.prefixHash);
  assert.deepEqual(keyed.map((r) => r.path).sort(), Object.keys(conversations).sort());
  for (const r of keyed) {
    const body = conversations[r.path]!;
    assert.match(prefixKey(r.prefixHash!, body, 100) ?? "", /^m\n.*hi$/s, r.path);
    assert.equal(
      prefixKey(r.prefixHash!, { ...body, user: "u" }, 100, "s"),
      "client\ns",
      `${r.path}: header over user`,
    );
    assert.equal(prefixKey(r.prefixHash!, { ...body, prompt_cache_key: "k" }, 100, "s"), "client\nk", r.path);
  }
});
