import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { ApiError, GantryClient, readNdjson, ServerUnreachableError } from "../../../server/api/client.ts";
import { freePort } from "../../support/server.ts";

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield new TextEncoder().encode(p);
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test("readNdjson joins lines split across chunks, including multi-byte characters", async () => {
  const euro = new TextEncoder().encode('{"response":"€"}\n');
  async function* split(): AsyncGenerator<Uint8Array> {
    yield new TextEncoder().encode('{"a":1}\n{"a"');
    yield new TextEncoder().encode(":2}\n\n");
    yield euro.slice(0, 14); // cuts the € in half
    yield euro.slice(14);
    yield new TextEncoder().encode('{"a":3}');
  }
  assert.deepEqual(await all(readNdjson(split())), [{ a: 1 }, { a: 2 }, { response: "€" }, { a: 3 }]);
});

test("readNdjson turns an error line into an ApiError after the lines before it", async () => {
  const seen: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const x of readNdjson(
        chunks('{"status":"pulling"}\n{"error":"digest mismatch"}\n{"status":"never"}\n'),
      ))
        seen.push(x);
    },
    (e: unknown) => e instanceof ApiError && e.message === "digest mismatch" && e.status === 200,
  );
  assert.deepEqual(seen, [{ status: "pulling" }]);
  await assert.rejects(all(readNdjson(chunks("not json\n"))), /invalid stream line: not json/);
});

// A small stand-in server that records requests and answers what each test sets up.
let server: http.Server;
let base = "";
const received: { method: string; url: string; body: Buffer }[] = [];
let handler: (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) => void = (_q, _b, res) => res.end();

before(async () => {
  server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (d: Buffer) => parts.push(d));
    req.on("end", () => {
      const body = Buffer.concat(parts);
      received.push({ method: req.method!, url: req.url!, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.close();
});

test("errors carry the status and the server's message (Ollama and OpenAI shapes, and plain text)", async () => {
  const client = new GantryClient(base);
  handler = (_q, _b, res) => {
    res.statusCode = 404;
    res.end(JSON.stringify({ error: 'model "x" not found, try pulling it first' }));
  };
  await assert.rejects(
    client.show("x"),
    (e: unknown) =>
      e instanceof ApiError && e.status === 404 && e.message === 'model "x" not found, try pulling it first',
  );
  handler = (_q, _b, res) => {
    res.statusCode = 400;
    res.end(JSON.stringify({ error: { message: "bad thing", type: "invalid_request_error" } }));
  };
  await assert.rejects(
    client.list(),
    (e: unknown) => e instanceof ApiError && e.status === 400 && e.message === "bad thing",
  );
  handler = (_q, _b, res) => {
    res.statusCode = 502;
    res.end("upstream down");
  };
  await assert.rejects(
    client.ps(),
    (e: unknown) => e instanceof ApiError && e.status === 502 && e.message === "upstream down",
  );
});

test("requests use Ollama's methods, paths and bodies; chat streams chunks", async () => {
  const client = new GantryClient(`${base}/`);
  received.length = 0;
  handler = (req, _b, res) => {
    if (req.url === "/api/chat") {
      res.setHeader("Content-Type", "application/x-ndjson");
      res.write('{"model":"m","message":{"role":"assistant","content":"Hel"},"done":false}\n');
      res.end('{"model":"m","message":{"role":"assistant","content":"lo"},"done":true,"eval_count":2}\n');
      return;
    }
    res.end();
  };
  await client.copy("a", "b");
  await client.delete("b");
  const got = await all(client.chat({ model: "m", messages: [{ role: "user", content: "hi" }] }));
  assert.deepEqual(
    got.map((c) => c.message?.content),
    ["Hel", "lo"],
  );
  assert.equal(got[1]!.eval_count, 2);
  assert.deepEqual(
    received.map((r) => [r.method, r.url, JSON.parse(r.body.toString())]),
    [
      ["POST", "/api/copy", { source: "a", destination: "b" }],
      ["DELETE", "/api/delete", { model: "b" }],
      ["POST", "/api/chat", { model: "m", messages: [{ role: "user", content: "hi" }], stream: true }],
    ],
  );
});

test("hasBlob reads HEAD 200/404, uploadBlob streams the file's bytes", async () => {
  const client = new GantryClient(base);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-client-"));
  const file = path.join(dir, "m.gguf");
  const data = crypto.randomBytes(2_000_000);
  fs.writeFileSync(file, data);
  handler = (req, _b, res) => {
    res.statusCode = req.method === "HEAD" ? (req.url!.endsWith("aa") ? 200 : 404) : 201;
    res.end();
  };
  assert.equal(await client.hasBlob("sha256:aa"), true);
  assert.equal(await client.hasBlob("sha256:bb"), false);
  received.length = 0;
  await client.uploadBlob("sha256:cc", file);
  assert.equal(received[0]!.url, "/api/blobs/sha256:cc");
  assert.ok(received[0]!.body.equals(data), "uploaded bytes equal the file");
  fs.rmSync(dir, { recursive: true });
});

test("a closed port is ServerUnreachableError naming the address", async () => {
  const port = await freePort();
  const client = new GantryClient(`http://127.0.0.1:${port}`);
  await assert.rejects(
    client.version(),
    (e: unknown) => e instanceof ServerUnreachableError && e.message.includes(`127.0.0.1:${port}`),
  );
});

test("an aborted stream rejects with the abort, not as unreachable", async () => {
  const client = new GantryClient(base);
  handler = (_q, _b, res) => {
    res.setHeader("Content-Type", "application/x-ndjson");
    res.write('{"model":"m","response":"a","done":false}\n');
  };
  const ac = new AbortController();
  const it = client.generate({ model: "m", prompt: "x" }, ac.signal);
  const first = await it.next();
  assert.equal(first.value?.response, "a");
  ac.abort();
  await assert.rejects(
    it.next(),
    (e: unknown) => !(e instanceof ServerUnreachableError) && e instanceof Error && e.name === "AbortError",
  );
});

test("a connection dropped mid-stream is reported as such", async () => {
  const client = new GantryClient(base);
  handler = (req, _b, res) => {
    res.setHeader("Content-Type", "application/x-ndjson");
    res.write('{"model":"m","response":"a","done":false}\n');
    setTimeout(() => req.socket.destroy(), 50);
  };
  const seen: string[] = [];
  await assert.rejects(async () => {
    for await (const c of client.generate({ model: "m", prompt: "x" })) seen.push(c.response);
  }, /closed the connection before the response was complete/);
  assert.deepEqual(seen, ["a"]);
});
