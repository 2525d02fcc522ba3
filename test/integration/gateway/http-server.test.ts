// HTTP/1.1 conformance of the gateway's client-facing server (createGatewayServer, http-server.ts) over real sockets:
// raw TCP connections for exact bytes, node's http client and fetch where a real client is the point. The handler uses
// only the request/response subset the gateway relies on. The tests assert what RFC 9112/9110 or a real client
// requires (framing, persistence of connections, refusals), never incidental details of node:http (header casing,
// reason phrases, Date or Keep-Alive headers, how many writes), so that any correct server passes them. The whole
// gateway on this server is tested in faults.test.ts and pipeline.test.ts.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { closeServers, type Echo, echoed, handled, newId, signal, start } from "../../support/conformance-server.ts";
import { type Answer, chunked, Conn, get, parseAnswer, post, within } from "../../support/raw-http.ts";

let port: number;
before(async () => ({ port } = await start()));
after(closeServers);

/** Sends one request over a fresh connection and returns the answer (the connection is left open). */
async function exchange(bytes: string, opts: { toHead?: boolean } = {}): Promise<{ a: Answer; c: Conn }> {
  const c = await Conn.open(port);
  await c.send(bytes);
  return { a: await c.answer(opts), c };
}

// ---- Connections ----

test("keep-alive: requests on one HTTP/1.1 connection are answered in turn; the handler sees the request as sent", async () => {
  const c = await Conn.open(port);
  await c.send(get("/echo?n=1", ["X-Test:   padded value \t"]));
  const first = echoed(await c.answer());
  assert.equal(first.method, "GET");
  assert.equal(first.url, "/echo?n=1");
  assert.equal(first.headers["x-test"], "padded value", "lower-case names; optional whitespace is not in the value");
  assert.ok(first.rawNames.includes("X-Test"), "rawHeaders keeps the names as sent");
  assert.equal(first.body, "");
  assert.equal(first.complete, true);
  assert.match(first.remote, /127\.0\.0\.1$/);
  await c.send(post("/echo?n=2", '{"a":1}', ["Content-Type: application/json"]));
  const second = echoed(await c.answer());
  assert.deepEqual([second.method, second.url, second.body], ["POST", "/echo?n=2", '{"a":1}']);
  await c.send(get("/echo?n=3"));
  assert.equal(echoed(await c.answer()).url, "/echo?n=3");
  assert.equal(c.ended, false);
  c.socket.destroy();
});

test("node's http client with a keep-alive agent sends its requests over one connection", async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const reused: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      const body = await new Promise<string>((resolve, reject) => {
        const req = http.request({ port, host: "127.0.0.1", path: `/echo?i=${i}`, method: "POST", agent }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () => resolve(text));
        });
        req.on("error", reject);
        req.end(`body ${i}`);
        reused.push(req.reusedSocket);
      });
      assert.equal((JSON.parse(body) as Echo).body, `body ${i}`);
    }
    assert.deepEqual(reused, [false, true, true]);
  } finally {
    agent.destroy();
  }
});

test("Connection: close from the client: the answer, then the server closes the connection", async () => {
  const { a, c } = await exchange(get("/echo", ["Connection: Close"]));
  assert.equal(echoed(a).url, "/echo");
  assert.equal(await c.closedByServer(), "", "nothing after the answer");
});

test("HTTP/1.0: without keep-alive the answer is followed by the close; with Connection: keep-alive the connection stays open", async () => {
  const { a, c } = await exchange(get("/echo?v=10", [], "1.0"));
  assert.equal(echoed(a).url, "/echo?v=10");
  assert.equal(await c.closedByServer(), "");
  // (an answer with a Content-Length: node closes an HTTP/1.0 connection after an answer it would have to measure)
  const kept = await exchange(get("/echo?v=10ka&sized=1", ["Connection: keep-alive"], "1.0"));
  assert.equal(echoed(kept.a).url, "/echo?v=10ka&sized=1");
  assert.notEqual(kept.a.framing, "close", "an answer to a kept-alive connection is delimited");
  await kept.c.send(get("/echo?v=second&sized=1", ["Connection: keep-alive"], "1.0"));
  assert.equal(echoed(await kept.c.answer()).url, "/echo?v=second&sized=1");
  kept.c.socket.destroy();
});

test("a handler's connection: close header closes the connection after the whole answer", async () => {
  const { a, c } = await exchange(post("/close", "ignored"));
  assert.equal(a.status, 200);
  assert.equal(a.body.toString(), "bye");
  assert.match(a.header("connection") ?? "", /close/i);
  assert.equal(await c.closedByServer(), "");
});

test("an absolute-form request target is accepted (RFC 9112 section 3.2.2)", async () => {
  const { a, c } = await exchange(get("http://test/echo?abs=1"));
  assert.match(echoed(a).url, /\/echo\?abs=1$/);
  c.socket.destroy();
});

// ---- Pipelining ----

test("pipelining: requests sent in one write, with and without bodies, are answered in order on one connection", async () => {
  const c = await Conn.open(port);
  await c.send(
    get("/echo?p=1") +
      post("/echo?p=2", "two") +
      chunked("/echo?p=3", ["thr", "ee"]) +
      post("/early?p=4", "an unread body") +
      get("/stream?parts=3") +
      get("/echo?p=6"),
  );
  const answers: Answer[] = [];
  for (let i = 0; i < 6; i++) answers.push(await c.answer());
  const seen = (a: Answer) => `${echoed(a).url} ${echoed(a).body}`;
  assert.deepEqual([answers[0]!, answers[1]!, answers[2]!, answers[5]!].map(seen), [
    "/echo?p=1 ",
    "/echo?p=2 two",
    "/echo?p=3 three",
    "/echo?p=6 ",
  ]);
  assert.equal(answers[3]!.body.toString(), '{"early":true}', "answered before its body, which is then skipped");
  assert.equal(answers[4]!.body.toString(), "part 0\npart 1\npart 2\n", "a stream holds back the answers after it");
  await c.send(get("/echo?p=7", ["Connection: close"]));
  assert.equal(echoed(await c.answer()).url, "/echo?p=7");
  assert.equal(await c.closedByServer(), "");
});

// ---- Request bodies ----

test("a Content-Length request sent a few bytes at a time (head and body) arrives intact", async () => {
  const body = JSON.stringify({ text: "héllo wörld ✓ 🚀".repeat(20) });
  const c = await Conn.open(port);
  await c.sendInPieces(post("/echo", body, ["X-Test: split"]), 3);
  const e = echoed(await c.answer());
  assert.equal(e.body, body);
  assert.equal(e.headers["x-test"], "split");
  assert.equal(e.headers["content-length"], String(Buffer.byteLength(body)));
  c.socket.destroy();
});

test("chunked request bodies (chunk extensions, upper-case hex, a trailer, split anywhere) arrive intact", async () => {
  const data = "a".repeat(10) + "b".repeat(300);
  const raw =
    "POST /echo?te=1 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "a;name=value\r\n" +
    "a".repeat(10) +
    "\r\n" +
    '12C;quoted="x y";flag\r\n' +
    "b".repeat(300) +
    "\r\n" +
    "0;last\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n";
  const c = await Conn.open(port);
  await c.send(raw);
  const whole = echoed(await c.answer());
  assert.equal(whole.body, data);
  assert.equal(whole.headers["transfer-encoding"], "chunked");
  await c.sendInPieces(raw.replace("te=1", "te=2"), 1);
  const split = echoed(await c.answer());
  assert.equal(split.url, "/echo?te=2");
  assert.equal(split.body, data);
  c.socket.destroy();
});

test("a request body the handler never reads is skipped: the next request on the connection is answered", async () => {
  const c = await Conn.open(port);
  await c.send(post("/early?s=1", "x".repeat(20_000)));
  assert.equal((await c.answer()).status, 200);
  await c.send(chunked("/early?s=2", ["y".repeat(5000), "z".repeat(5000)]));
  assert.equal((await c.answer()).status, 200);
  await c.send(get("/echo?s=3"));
  assert.equal(echoed(await c.answer()).url, "/echo?s=3");
  c.socket.destroy();
});

test("an empty body: Content-Length: 0, and a POST without a length, end at once with no body", async () => {
  const c = await Conn.open(port);
  await c.send(post("/echo?e=0", ""));
  const e = echoed(await c.answer());
  assert.deepEqual([e.body, e.headers["content-length"], e.complete], ["", "0", true]);
  await c.send("POST /echo?e=none HTTP/1.1\r\nHost: test\r\n\r\n");
  assert.equal(echoed(await c.answer()).body, "");
  c.socket.destroy();
});

// ---- Answers ----

test("res.end(chunk): the answer carries a Content-Length equal to its bytes (multi-byte UTF-8 included)", async () => {
  const body = "ünïcödé ✓ 🚀";
  const { a, c } = await exchange(post("/echo", body));
  assert.equal(a.framing, "length");
  assert.equal(Number(a.header("content-length")), a.body.length);
  assert.equal(echoed(a).body, body);
  c.socket.destroy();
  // a real client reads the same answer
  const r = await fetch(`http://127.0.0.1:${port}/echo`, { method: "POST", body });
  assert.equal(((await r.json()) as Echo).body, body);
});

test("a streamed answer reaches an HTTP/1.1 client chunked and in order, and the connection goes on; fetch reads it", async () => {
  const c = await Conn.open(port);
  await c.send(get("/stream?parts=5"));
  const a = await c.answer();
  assert.equal(a.framing, "chunked");
  assert.equal(a.body.toString(), "part 0\npart 1\npart 2\npart 3\npart 4\n");
  await c.send(get("/echo?after=stream"));
  assert.equal(echoed(await c.answer()).url, "/echo?after=stream");
  c.socket.destroy();
  const r = await fetch(`http://127.0.0.1:${port}/stream?parts=6`);
  const lines: string[] = [];
  for await (const chunk of r.body!.pipeThrough(new TextDecoderStream())) lines.push(chunk);
  assert.equal(lines.join(""), "part 0\npart 1\npart 2\npart 3\npart 4\npart 5\n");
});

test("a streamed answer reaches an HTTP/1.0 client unchunked, delimited by the close (keep-alive asked or not)", async () => {
  for (const headers of [[], ["Connection: keep-alive"]]) {
    const c = await Conn.open(port);
    await c.send(get("/stream?parts=3", headers, "1.0"));
    const rest = await c.closedByServer();
    const a = parseAnswer(Buffer.from(rest, "latin1"), 0, true, false)!.answer;
    assert.equal(a.status, 200);
    assert.equal(a.framing, "close", "no Transfer-Encoding to an HTTP/1.0 client");
    assert.equal(a.body.toString(), "part 0\npart 1\npart 2\n");
  }
});

test("HEAD gets the head and no body; 204 and 304 have no body; the next answer follows at once", async () => {
  const c = await Conn.open(port);
  await c.send(
    "HEAD /echo HTTP/1.1\r\nHost: test\r\n\r\n" +
      get("/status?code=204") +
      get("/status?code=304") +
      get("/echo?after=empty"),
  );
  const head = await c.answer({ toHead: true });
  assert.equal(head.status, 200);
  assert.match(head.header("content-type") ?? "", /application\/json/);
  const noContent = await c.answer();
  assert.equal(noContent.status, 204);
  assert.equal(noContent.header("transfer-encoding"), undefined, "no Transfer-Encoding in a 204");
  assert.equal(noContent.header("content-length"), undefined, "no Content-Length in a 204");
  assert.equal((await c.answer()).status, 304);
  assert.equal(echoed(await c.answer()).url, "/echo?after=empty", "no stray body bytes before the next answer");
  c.socket.destroy();
});

test("flushHeaders(): the head reaches the client before any body byte exists", async () => {
  const id = newId();
  const c = await Conn.open(port);
  await c.send(get(`/flush?id=${id}`));
  const head = await c.bytesAfterAnswers((t) => t.includes("\r\n\r\n"));
  assert.match(head, /^HTTP\/1\.1 200 /);
  assert.ok(head.endsWith("\r\n\r\n"), "the head alone");
  signal(`flush:${id}`).resolve();
  const a = await c.answer();
  assert.equal(a.body.toString(), "after the head");
  c.socket.destroy();
});

// ---- Expect: 100-continue ----

test("Expect: 100-continue: writeContinue() sends 100 Continue before the final answer (raw and node's client)", async () => {
  const c = await Conn.open(port);
  await c.send("POST /continue HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  const interim = await c.answer();
  assert.equal(interim.status, 100);
  await c.send("hello");
  const e = echoed(await c.answer());
  assert.deepEqual([e.body, e.headers.expect], ["hello", "100-continue"]);
  c.socket.destroy();
  // node's client sends the body only on 'continue'
  const body = await new Promise<string>((resolve, reject) => {
    const req = http.request(
      { port, host: "127.0.0.1", path: "/continue", method: "POST", headers: { expect: "100-continue" } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve(text));
      },
    );
    req.on("error", reject);
    req.on("continue", () => req.end("sent after 100"));
  });
  assert.equal((JSON.parse(body) as Echo).body, "sent after 100");
});

test("Expect: 100-continue to a handler that answers without the body: the final status, no 100", async () => {
  const c = await Conn.open(port);
  await c.send(
    "POST /early?status=403 HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n",
  );
  const a = await c.answer();
  assert.equal(a.status, 403);
  assert.deepEqual(JSON.parse(a.body.toString()), { early: true });
  c.socket.destroy();
});

// ---- Malformed and hostile requests ----

/** Requests a server must refuse with 400. `inHead`: the error is in the head, so the handler must never see it. */
const MALFORMED: Array<{ name: string; bytes: string; inHead: boolean }> = [
  {
    name: "both Content-Length and Transfer-Encoding",
    bytes:
      "POST /echo?bad=cl-te HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    inHead: true,
  },
  {
    name: "two different Content-Length fields",
    bytes: "POST /echo?bad=cl2 HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    inHead: true,
  },
  {
    name: "a Content-Length list of different values",
    bytes: "POST /echo?bad=cl-list HTTP/1.1\r\nHost: t\r\nContent-Length: 1, 2\r\n\r\nab",
    inHead: true,
  },
  {
    name: "a non-numeric Content-Length",
    bytes: "POST /echo?bad=cl-abc HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
    inHead: true,
  },
  {
    name: "a negative Content-Length",
    bytes: "POST /echo?bad=cl-neg HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
    inHead: true,
  },
  {
    name: "Transfer-Encoding: gzip (chunked not final)",
    bytes: "POST /echo?bad=te-gzip HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    inHead: false, // node hands the head to the handler before it refuses the body
  },
  {
    name: "Transfer-Encoding: chunked, gzip",
    bytes: "POST /echo?bad=te-cg HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
    inHead: true,
  },
  {
    name: "an invalid chunk size",
    bytes:
      "POST /echo?bad=chunk-size HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    inHead: false,
  },
  {
    name: "chunk data longer than its size",
    bytes: "POST /echo?bad=chunk-data HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
    inHead: false,
  },
  {
    name: "a space before the colon of a header name",
    bytes: "GET /echo?bad=space HTTP/1.1\r\nHost : t\r\n\r\n",
    inHead: true,
  },
  {
    name: "obs-fold (a header line starting with a space)",
    bytes: "GET /echo?bad=fold HTTP/1.1\r\nHost: t\r\nX-Test: one\r\n two\r\n\r\n",
    inHead: true,
  },
  {
    name: "a NUL in a header value",
    bytes: "GET /echo?bad=nul HTTP/1.1\r\nHost: t\r\nX-Test: a\0b\r\n\r\n",
    inHead: true,
  },
  {
    name: "a bare CR in a header value",
    bytes: "GET /echo?bad=cr HTTP/1.1\r\nHost: t\r\nX-Test: a\rb\r\n\r\n",
    inHead: true,
  },
  { name: "a malformed version", bytes: "GET /echo?bad=ver HTTP/1.x\r\nHost: t\r\n\r\n", inHead: true },
  { name: "a misspelt protocol name", bytes: "GET /echo?bad=proto HTPT/1.1\r\nHost: t\r\n\r\n", inHead: true },
];

test("malformed requests get 400 with a JSON error and the connection closed; a bad head never reaches the handler", async (t) => {
  for (const m of MALFORMED)
    await t.test(m.name, async () => {
      const { a, c } = await exchange(m.bytes);
      assert.equal(a.status, 400);
      assert.notEqual((JSON.parse(a.body.toString()) as { error?: unknown }).error, undefined, "a JSON error");
      assert.equal(await c.closedByServer(), "", "the connection closed after the answer");
      if (m.inHead) assert.ok(!handled.includes(/^\S+ (\S+)/.exec(m.bytes)![1]!), "the handler never saw it");
    });
});

test("a header section over 16 KiB gets 431 and the connection closed; one of 12 KiB is accepted", async () => {
  const fields = (kib: number) => Array.from({ length: kib }, (_, i) => `X-Pad-${i}: ${"p".repeat(1000)}`);
  const ok = await exchange(get("/echo?size=12", fields(12)));
  assert.equal(echoed(ok.a).url, "/echo?size=12");
  ok.c.socket.destroy();
  const { a, c } = await exchange(get("/echo?size=20", fields(20)));
  assert.equal(a.status, 431);
  assert.notEqual((JSON.parse(a.body.toString()) as { error?: unknown }).error, undefined, "a JSON error");
  assert.equal(await c.closedByServer(), "");
  assert.ok(!handled.includes("/echo?size=20"));
});

test("a client too slow with its headers, or with its body, gets 408 and the connection closed", async () => {
  const slow = await start({ headersSeconds: 1, requestSeconds: 1 });
  for (const partial of [
    "GET /echo?slow=head HTTP/1.1\r\nHost: test\r\nX-Test: ",
    'POST /echo?slow=body HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n{"part":',
  ]) {
    const c = await Conn.open(slow.port);
    await c.send(partial);
    const a = await c.answer();
    assert.equal(a.status, 408, partial);
    assert.notEqual((JSON.parse(a.body.toString()) as { error?: unknown }).error, undefined, "a JSON error");
    assert.equal(await c.closedByServer(), "");
  }
});

// ---- Clients that go away or do not read ----

test("a client that goes away: res emits 'close' with writableFinished false, before or during the answer", async () => {
  for (const started of [false, true]) {
    const id = newId();
    const c = await Conn.open(port);
    await c.send(get(`/hang?id=${id}${started ? "&started=1" : ""}`));
    if (started) await c.bytesAfterAnswers((t) => t.includes("first part"));
    else await within(signal(`hang-seen:${id}`).promise, "the request at the handler");
    c.socket.destroy();
    const closed = await within(signal<{ writableFinished: boolean }>(`hang:${id}`).promise, "'close' on res");
    assert.equal(closed.writableFinished, false, `started: ${started}`);
  }
});

test("backpressure: res.write returns false while the client reads nothing, and 'drain' fires once it reads", async () => {
  const id = newId();
  const c = await Conn.open(port);
  c.socket.pause();
  await c.send(get(`/flood?id=${id}`));
  const { full, written } = await within(
    signal<{ full: boolean; written: number }>(`flood-full:${id}`).promise,
    "res.write returning false",
  );
  assert.ok(full, `res.write never returned false in ${written >> 20} MiB to a client that reads nothing`);
  c.socket.resume();
  await within(signal(`flood-drain:${id}`).promise, "'drain'");
  const a = await c.answer();
  assert.equal(a.body.length, written + 64 * 1024, "every byte written arrived");
  assert.ok(
    a.body.every((b) => b === 0x78),
    "the bytes are intact",
  );
  c.socket.destroy();
});

// ---- Shutdown ----

test("graceful close: close() + closeIdleConnections() end idle keep-alive connections at once; a running stream completes", async () => {
  const { server, port: p } = await start();
  const idle = await Conn.open(p);
  await idle.send(get("/echo?idle=1"));
  echoed(await idle.answer());
  const id = newId();
  const busy = await Conn.open(p);
  await busy.send(get(`/flush?id=${id}`));
  await busy.bytesAfterAnswers((t) => t.includes("\r\n\r\n"));
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeIdleConnections();
  assert.equal(await idle.closedByServer(), "", "the idle connection is closed without an answer");
  assert.equal(busy.ended, false);
  signal(`flush:${id}`).resolve();
  assert.equal((await busy.answer()).body.toString(), "after the head", "the running answer completes");
  await assert.rejects(Conn.open(p), "no new connections are accepted");
  busy.socket.destroy();
  await within(closed, "the close callback once the last connection ended");
});

// ---- Header values ----

test("a header name or value with CR/LF never injects a header (writeHead and setHeader)", async () => {
  const cases = [
    { name: "x-a", value: "1\r\nx-injected: yes" },
    { name: "x-a", value: "1\nx-injected: yes" },
    { name: "x-a", value: "1\rx-injected: yes" },
    { name: "x-a\r\nx-injected", value: "yes" },
  ];
  for (const via of ["writeHead", "setHeader"])
    for (const { name, value } of cases) {
      const what = `${via} ${JSON.stringify(name)}: ${JSON.stringify(value)}`;
      const c = await Conn.open(port);
      await c.send(get(`/inject?via=${via}&name=${encodeURIComponent(name)}&value=${encodeURIComponent(value)}`));
      let a: Answer | undefined;
      try {
        a = await c.answer();
      } catch {
        // refused by closing the connection: what arrived is checked below
      }
      assert.ok(!a?.header("x-injected"), what);
      assert.doesNotMatch(c.text, /[\r\n]x-injected/i, what);
      if (a) assert.equal(a.status, 200, what);
      c.socket.destroy();
    }
});
