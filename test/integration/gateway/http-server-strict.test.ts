// The gateway's HTTP/1.1 server where it is stricter than node:http's was (RFC 9112/9110): a request line without a
// version, Host rules, no interim answer to an HTTP/1.0 client, and an HTTP/1.0 keep-alive answer with a length.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { closeServers, echoed, start } from "../../support/conformance-server.ts";
import { Conn, get } from "../../support/raw-http.ts";

let port: number;
before(async () => ({ port } = await start()));
after(closeServers);

/** Asserts that `bytes` on a fresh connection get 400 with a JSON error, and then the close of the connection. */
async function assertRefused(bytes: string): Promise<void> {
  const c = await Conn.open(port);
  await c.send(bytes);
  const a = await c.answer();
  assert.equal(a.status, 400, bytes);
  const error = a.body.length ? (JSON.parse(a.body.toString()) as { error?: unknown }).error : undefined;
  assert.notEqual(error, undefined, `${bytes}: a JSON error`);
  assert.equal(await c.closedByServer(), "", `${bytes}: the connection closed after the answer`);
}

// RFC 9112 section 3: request-line = method SP request-target SP HTTP-version; an invalid request line SHOULD get
// 400. node parses `GET /x\r\n` as an HTTP/0.9 request and answers it with an HTTP/1.1 head (which no HTTP/0.9 client
// reads) and hands it to the handler.
test("a request line without an HTTP version gets 400 in a JSON body and the connection closed", async () => {
  await assertRefused("GET /echo?gap=nover\r\nHost: t\r\n\r\n");
});

// RFC 9112 section 3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message
// that lacks a Host header field and to any request message that contains more than one Host header field line or a
// Host header field with an invalid field value." node accepts two Host lines and a Host of `a b`; it refuses a
// missing Host with 400 but with an empty body (its own answer, not the gateway's JSON one).
test("two Host fields, an invalid Host, and no Host get 400 in a JSON body", async () => {
  const failures: string[] = [];
  for (const bytes of [
    "GET /echo?gap=two-hosts HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "GET /echo?gap=bad-host HTTP/1.1\r\nHost: a b\r\n\r\n",
    "GET /echo?gap=no-host HTTP/1.1\r\n\r\n",
  ])
    await assertRefused(bytes).catch((e: Error) => failures.push(e.message));
  assert.deepEqual(failures, []);
});

// RFC 9110 section 10.1.1: "A server that receives a 100-continue expectation in an HTTP/1.0 request MUST ignore that
// expectation." The gateway (gateway.ts) calls res.writeContinue() whenever the header asks; node's writeContinue()
// then writes `HTTP/1.1 100 Continue` to an HTTP/1.0 client. The server's writeContinue() should send nothing there.
test("writeContinue() on an HTTP/1.0 request sends no 100 Continue", async () => {
  const c = await Conn.open(port);
  await c.send("POST /continue HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello");
  const a = await c.answer();
  assert.equal(a.status, 200, "the final answer first, no interim answer");
  assert.equal(echoed(a).body, "hello");
  c.socket.destroy();
});

// Not an RFC MUST (a server may close any connection after an answer), but asked of the replacement: an HTTP/1.0
// client that asks for keep-alive keeps its connection after an answer written with res.end(chunk). node measures
// such an answer only for HTTP/1.1 and ends an HTTP/1.0 one by closing the connection.
test("HTTP/1.0 with Connection: keep-alive keeps the connection after res.end(chunk)", async () => {
  const c = await Conn.open(port);
  await c.send(get("/echo?gap=10ka", ["Connection: keep-alive"], "1.0"));
  const a = await c.answer();
  assert.equal(echoed(a).url, "/echo?gap=10ka");
  assert.equal(a.framing, "length");
  await c.send(get("/echo?gap=10ka-2", ["Connection: keep-alive"], "1.0"));
  assert.equal(echoed(await c.answer()).url, "/echo?gap=10ka-2");
  c.socket.destroy();
});

test("a client that keeps its side open after a Connection: close answer is let go (no socket held for ever)", async () => {
  const { server, port: p } = await start();
  const s = net.connect({ port: p, host: "127.0.0.1", allowHalfOpen: true }); // does not close when the server does
  let text = "";
  s.setEncoding("latin1").on("data", (d: string) => (text += d));
  const ended = new Promise((r) => s.once("end", r));
  s.write("GET /echo HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  await ended; // the server's FIN, after the answer
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.equal(server.live.size, 1, "the half-closed connection is still the server's");
  const until = Date.now() + 30_000;
  while (server.live.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.live.size, 0, "the server let go of the connection the client left open");
  s.destroy();
});
