import assert from "node:assert/strict";
import { test } from "node:test";
import { ChunkedDecoder, HttpParseError, parseResponseHead } from "../../../server/gateway/http1-parse.ts";

const head = (...lines: string[]) => lines.join("\r\n");

test("a response head: status, lowercase fields, repeated fields joined, Set-Cookie kept apart", () => {
  const h = parseResponseHead(
    head(
      "HTTP/1.1 201 Created",
      "Content-Type: application/json",
      "Content-Length: 12",
      "Vary: a",
      "vary: b",
      "Set-Cookie: x=1",
      "set-cookie: y=2",
      "X-Empty:",
    ),
    "POST",
  );
  assert.equal(h.status, 201);
  assert.deepEqual(h.headers, {
    "content-type": "application/json",
    "content-length": "12",
    vary: "a, b",
    "set-cookie": ["x=1", "y=2"],
    "x-empty": "",
  });
  assert.deepEqual(h.body, { kind: "length", length: 12 });
  assert.equal(h.keepAlive, true);
});

test("hop-by-hop fields describe the connection: consumed, not passed on; Keep-Alive's timeout is read", () => {
  const h = parseResponseHead(
    head(
      "HTTP/1.1 200 OK",
      "Connection: keep-alive, X-Hop",
      "Keep-Alive: timeout=5",
      "X-Hop: 1",
      "Transfer-Encoding: chunked",
      "Upgrade: h2c",
      "Trailer: x",
      "X-End: 2",
    ),
    "GET",
  );
  assert.deepEqual(h.headers, { "x-end": "2" });
  assert.equal(h.keepAliveMs, 5000);
  assert.deepEqual(h.body, { kind: "chunked" });
  assert.equal(h.keepAlive, true);
});

test("keep-alive: HTTP/1.1 unless Connection: close; HTTP/1.0 only with Connection: keep-alive", () => {
  const ka = (...l: string[]) => parseResponseHead(head(...l, "Content-Length: 0"), "GET").keepAlive;
  assert.equal(ka("HTTP/1.1 200 OK"), true);
  assert.equal(ka("HTTP/1.1 200 OK", "Connection: Close"), false);
  assert.equal(ka("HTTP/1.0 200 OK"), false);
  assert.equal(ka("HTTP/1.0 200 OK", "Connection: keep-alive"), true);
});

test("framing: no body for HEAD, 204 and 304; length; chunked; until close; a length beside a coding is dropped", () => {
  assert.deepEqual(parseResponseHead(head("HTTP/1.1 200 OK", "Content-Length: 99"), "HEAD").body, {
    kind: "length",
    length: 0,
  });
  assert.deepEqual(parseResponseHead("HTTP/1.1 204 No Content", "DELETE").body, { kind: "length", length: 0 });
  assert.deepEqual(parseResponseHead("HTTP/1.1 304 Not Modified", "GET").body, { kind: "length", length: 0 });
  const close = parseResponseHead("HTTP/1.1 200 OK", "GET");
  assert.deepEqual(close.body, { kind: "close" });
  assert.equal(close.keepAlive, false);
  const both = parseResponseHead(head("HTTP/1.1 200 OK", "Content-Length: 5", "Transfer-Encoding: chunked"), "GET");
  assert.deepEqual(both.body, { kind: "chunked" });
  assert.equal(both.keepAlive, false);
  assert.equal(both.headers["content-length"], undefined);
  const gzipOnly = parseResponseHead(head("HTTP/1.1 200 OK", "Transfer-Encoding: gzip"), "GET");
  assert.deepEqual(gzipOnly.body, { kind: "close" });
  assert.equal(parseResponseHead("HTTP/1.1 200", "GET").status, 200);
});

test("malformed heads are refused, not guessed at", () => {
  for (const bad of [
    "HTTP/2 200 OK",
    "HTTP/1.1 20 OK",
    "ICY 200 OK",
    head("HTTP/1.1 200 OK", "no colon here"),
    head("HTTP/1.1 200 OK", ": empty name"),
    head("HTTP/1.1 200 OK", "X-A: 1", " folded"),
    head("HTTP/1.1 200 OK", "Content-Length: 1", "Content-Length: 2"),
    head("HTTP/1.1 200 OK", "Content-Length: -1"),
    head("HTTP/1.1 200 OK", "Content-Length: 1e3"),
  ])
    assert.throws(() => parseResponseHead(bad, "GET"), HttpParseError, JSON.stringify(bad));
  // the same length twice is one length
  assert.deepEqual(parseResponseHead(head("HTTP/1.1 200 OK", "Content-Length: 3", "Content-Length: 3"), "GET").body, {
    kind: "length",
    length: 3,
  });
});

const CHUNKED = Buffer.from("5;ext=1\r\nhello\r\n1A\r\n" + "x".repeat(26) + "\r\n0\r\nX-Trailer: t\r\n\r\nNEXT");

test("the chunked coding decodes whatever way the bytes are split, and says where the next bytes start", () => {
  for (const step of [1, 2, 3, 7, CHUNKED.length]) {
    const d = new ChunkedDecoder();
    const parts: Buffer[] = [];
    let last: Buffer = Buffer.alloc(0),
      at = 0;
    for (let i = 0; i < CHUNKED.length && !d.done; i += step) {
      last = CHUNKED.subarray(i, i + step);
      at = i;
      parts.push(...d.push(last));
    }
    assert.equal(Buffer.concat(parts).toString(), "hello" + "x".repeat(26), `step ${step}`);
    assert.equal(d.done, true);
    // what of "NEXT" the last piece held is left for the next answer
    assert.equal(last.subarray(d.rest).toString(), CHUNKED.subarray(CHUNKED.length - 4, at + step).toString());
  }
});

test("a malformed chunked body is refused", () => {
  for (const bad of ["zz\r\n", "5\r\nhelloXX", "5\nhello\r\n", "1234567890abc\r\n", `${"1".repeat(9000)}`]) {
    const d = new ChunkedDecoder();
    assert.throws(() => d.push(Buffer.from(bad)), HttpParseError, bad.slice(0, 20));
  }
});
