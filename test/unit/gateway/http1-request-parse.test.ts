import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRequestHead, RequestParseError } from "../../../server/gateway/http1-request-parse.ts";

const head = (...lines: string[]) => lines.join("\r\n");

test("a request head: method, target, version, fields by lowercase name and as sent, values trimmed", () => {
  const h = parseRequestHead(head("POST /acme/chat/v1/chat/completions?x=1 HTTP/1.1", "Host: gw", "X-Tag: \t a b \t"));
  assert.equal(h.method, "POST");
  assert.equal(h.url, "/acme/chat/v1/chat/completions?x=1");
  assert.equal(h.minor, 1);
  assert.deepEqual(h.headers, { host: "gw", "x-tag": "a b" });
  assert.deepEqual(h.rawHeaders, ["Host", "gw", "X-Tag", "a b"]);
  assert.deepEqual(h.body, { kind: "length", length: 0 });
  assert.equal(h.keepAlive, true);
});

test("repeated fields combine as node:http's do: a list, the first of single-valued ones, cookies with '; '", () => {
  const h = parseRequestHead(
    head(
      "GET / HTTP/1.1",
      "Host: gw",
      "Accept: a",
      "accept: b",
      "Authorization: Key one",
      "Authorization: Key two",
      "Cookie: a=1",
      "Cookie: b=2",
      "Set-Cookie: x",
      "Set-Cookie: y",
    ),
  );
  assert.equal(h.headers.accept, "a, b");
  assert.equal(h.headers.authorization, "Key one");
  assert.equal(h.headers.cookie, "a=1; b=2");
  assert.deepEqual(h.headers["set-cookie"], ["x", "y"]);
  assert.equal(h.rawHeaders.filter((x) => x === "Authorization").length, 2, "every field stays in rawHeaders");
});

test("the body: a Content-Length (repeated identically is fine), chunked, or none", () => {
  assert.deepEqual(parseRequestHead(head("POST / HTTP/1.1", "Host: a", "Content-Length: 12")).body, {
    kind: "length",
    length: 12,
  });
  assert.deepEqual(
    parseRequestHead(head("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 5")).body,
    { kind: "length", length: 5 },
  );
  assert.deepEqual(parseRequestHead(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: Chunked")).body, {
    kind: "chunked",
  });
});

test("keep-alive: HTTP/1.1 unless close; HTTP/1.0 only with keep-alive", () => {
  const ka = (...l: string[]) => parseRequestHead(head(...l)).keepAlive;
  assert.equal(ka("GET / HTTP/1.1", "Host: a", "Connection: close"), false);
  assert.equal(ka("GET / HTTP/1.1", "Host: a", "Connection: Upgrade, Close"), false);
  assert.equal(ka("GET / HTTP/1.0"), false);
  assert.equal(ka("GET / HTTP/1.0", "Connection: Keep-Alive"), true);
  assert.equal(ka("GET / HTTP/1.0", "Connection: keep-alive, close"), false);
});

test("malformed or ambiguous heads are refused with 400 and a reason, never guessed at", () => {
  const cases: Array<[string, RegExp]> = [
    [head("GET /"), /request line/],
    [head("GET / HTTP/2.0", "Host: a"), /version/],
    [head("G(T / HTTP/1.1", "Host: a"), /method/],
    [head("GET nope HTTP/1.1", "Host: a"), /target/],
    [head("GET / HTTP/1.1"), /Host/],
    [head("GET / HTTP/1.1", "Host: a", "Host: b"), /Host/],
    [head("GET / HTTP/1.1", "Host: a b"), /Host/],
    [head("GET / HTTP/1.1", "Host: a", "X : 1"), /header field/],
    [head("GET / HTTP/1.1", "Host: a", "X: 1", " folded"), /folding/],
    [head("GET / HTTP/1.1", "Host: a", "X: a\0b"), /control character/],
    [head("GET / HTTP/1.1", "Host: a", "X: a\rb"), /control character/],
    [head("GET / HTTP/1.1", "Host: a", "X: a\nY: b"), /control character/],
    [head("POST / HTTP/1.1", "Host: a", "Content-Length: 1", "Content-Length: 2"), /conflicting/],
    [head("POST / HTTP/1.1", "Host: a", "Content-Length: -1"), /Content-Length/],
    [head("POST / HTTP/1.1", "Host: a", "Content-Length: 1", "Transfer-Encoding: chunked"), /both/],
    [head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: gzip, chunked"), /Transfer-Encoding/],
    [head("POST / HTTP/1.0", "Transfer-Encoding: chunked"), /HTTP\/1\.0/],
  ];
  for (const [h, reason] of cases) {
    assert.throws(
      () => parseRequestHead(h),
      (e: unknown) => e instanceof RequestParseError && e.status === 400 && reason.test(e.message),
      JSON.stringify(h),
    );
  }
});

test("a head over 16 KiB is refused with 431", () => {
  assert.throws(
    () => parseRequestHead(head("GET / HTTP/1.1", "Host: a", `X: ${"a".repeat(16 * 1024)}`)),
    (e: unknown) => e instanceof RequestParseError && e.status === 431,
  );
});
