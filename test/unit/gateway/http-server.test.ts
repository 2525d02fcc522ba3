import assert from "node:assert/strict";
import { test } from "node:test";
import { preflightHeaders } from "../../../server/gateway/cors.ts";
import { refusalResponse } from "../../../server/gateway/http-server.ts";
import { guessShape } from "../../../server/gateway/routing.ts";

const parse = (raw: string) => {
  const [head, body] = raw.split("\r\n\r\n");
  return { status: Number(head!.split(" ")[1]), head: head!, body: JSON.parse(body!) as { error: unknown } };
};

test("a request the server refused gets a complete JSON answer in the shape its request target names", () => {
  const big = parse(
    refusalResponse(431, "the request line or headers are too large", "/acme/chat/v1/models?x=aaaa", "r1"),
  );
  assert.equal(big.status, 431);
  assert.match(big.head, /Connection: close/);
  assert.match(big.head, /\r\nX-Request-Id: r1\r\n/);
  assert.match(big.head, new RegExp(`Content-Length: ${Buffer.byteLength(JSON.stringify(big.body))}`));
  assert.equal((big.body.error as { type: string }).type, "invalid_request_error");
  const api = parse(
    refusalResponse(400, "malformed HTTP request (malformed header field)", "/acme/chat/api/chat", "r2"),
  );
  assert.equal(api.status, 400);
  assert.match(api.body.error as string, /malformed header field/);
  assert.equal(parse(refusalResponse(408, "the request was not received in time", "/", "r3")).status, 408);
});

test("the error shape of any path: OpenAI under a v1 segment and the management API, Ollama's otherwise", () => {
  for (const p of ["/acme%2Fchat/v1/models", "//acme/chat/v1", "/ACME/chat/v1/chat/completions?x=1", "/_gantry/v1/x"])
    assert.equal(guessShape(p), "openai", p);
  for (const p of ["/", "/acme/chat/api/tags", "/nope", "/acme/chat/v10/x"]) assert.equal(guessShape(p), "ollama", p);
});

test("a preflight allows the headers the browser asks for (Authorization is never covered by a wildcard)", () => {
  assert.equal(
    preflightHeaders("Authorization, Content-Type")["access-control-allow-headers"],
    "Authorization, Content-Type",
  );
  assert.equal(preflightHeaders(undefined)["access-control-allow-headers"], "authorization, content-type");
  assert.equal(preflightHeaders("x\r\nset-cookie: a")["access-control-allow-headers"], "authorization, content-type");
  assert.match(preflightHeaders(undefined)["access-control-allow-methods"]!, /DELETE/);
});
