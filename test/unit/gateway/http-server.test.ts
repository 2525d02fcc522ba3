import assert from "node:assert/strict";
import { test } from "node:test";
import { preflightHeaders } from "../../../server/gateway/1-dispatch/cors.ts";
import { AppError } from "../../../server/common/errors.ts";
import { clientErrorAnswer, refusalResponse } from "../../../server/gateway/http-server.ts";
import { guessShape } from "../../../server/gateway/1-dispatch/target.ts";

const parse = (raw: string) => {
  const [head, body] = raw.split("\r\n\r\n");
  return { status: Number(head!.split(" ")[1]), head: head!, body: JSON.parse(body!) as { error: unknown } };
};

test("a request the server refused gets a complete JSON answer in the shape its request target names", () => {
  const big = parse(
    refusalResponse(new AppError("HEADERS_TOO_LARGE", "too large"), "/acme/chat/v1/models?x=aaaa", "r1"),
  );
  assert.equal(big.status, 431);
  assert.match(big.head, /Connection: close/);
  assert.match(big.head, /\r\nX-Request-Id: r1\r\n/);
  assert.equal((big.body.error as { type: string }).type, "invalid_request_error");
  const api = parse(refusalResponse(new AppError("BAD_REQUEST", "malformed"), "/acme/chat/api/chat", "r2"));
  assert.equal(api.status, 400);
  assert.equal(api.body.error, "malformed");
  const busy = refusalResponse(new AppError("SERVER_BUSY", "busy", { headers: { "retry-after": "5" } }), "/", "r3");
  assert.match(busy, /^HTTP\/1\.1 503 .*\r\nretry-after: 5\r\n/s);
});

test("a refusal's Content-Length counts the bytes of its UTF-8 body (the socket writes it as UTF-8)", () => {
  const raw = Buffer.from(refusalResponse(new AppError("BAD_REQUEST", "ünïcödé ✓"), "/", "r"), "utf8");
  const at = raw.indexOf("\r\n\r\n") + 4;
  const length = Number(/Content-Length: (\d+)/.exec(raw.subarray(0, at).toString("latin1"))![1]);
  assert.equal(length, raw.length - at);
});

test("node's parser errors map to the status node's own answer has: 431, 413, 408, 400; none for a client gone", () => {
  assert.equal(clientErrorAnswer("HPE_HEADER_OVERFLOW", undefined)?.code, "HEADERS_TOO_LARGE");
  assert.equal(clientErrorAnswer("HPE_CHUNK_EXTENSIONS_OVERFLOW", undefined)?.code, "PAYLOAD_TOO_LARGE");
  assert.equal(clientErrorAnswer("ERR_HTTP_REQUEST_TIMEOUT", undefined)?.code, "REQUEST_TIMEOUT");
  const bad = clientErrorAnswer("HPE_INVALID_HEADER_TOKEN", "Invalid header token");
  assert.deepEqual(bad, { code: "BAD_REQUEST", message: "malformed HTTP request (Invalid header token)" });
  assert.equal(clientErrorAnswer("ECONNRESET", undefined), undefined);
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
