import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { BlobStore } from "../../../server/store/blobs.ts";
import { parseDigest } from "../../../server/store/digest.ts";

const sha = (data: Buffer | string) => parseDigest(`sha256:${createHash("sha256").update(data).digest("hex")}`);
const tempRoot = () => fs.mkdtemp(path.join(os.tmpdir(), "gantry-blobs-"));

test("put stores content under its digest and reports it", async () => {
  const store = new BlobStore(await tempRoot());
  const data = Buffer.from("hello blobs");
  const put = await store.put(data);
  assert.deepEqual(put, { digest: sha(data), size: data.length, created: true });
  assert.ok(await store.has(put.digest));
  assert.equal(await store.size(put.digest), data.length);
  assert.deepEqual(await fs.readFile(store.path(put.digest)), data);
  assert.equal(path.basename(store.path(put.digest)), `sha256-${put.digest.slice(7)}`);
  assert.equal((await store.put(data)).created, false, "same content again is not a new blob");
});

test("put streams many chunks and verifies an expected digest", async () => {
  const store = new BlobStore(await tempRoot());
  const chunks = Array.from({ length: 50 }, (_, i) => Buffer.alloc(10_000, i));
  const whole = Buffer.concat(chunks);
  const put = await store.put(Readable.from(chunks), sha(whole));
  assert.equal(put.size, whole.length);
  assert.deepEqual(await fs.readFile(store.path(put.digest)), whole);
});

test("a digest mismatch stores nothing and leaves no temp file", async () => {
  const store = new BlobStore(await tempRoot());
  const claimed = sha("something else");
  await assert.rejects(
    store.put(Buffer.from("actual content"), claimed),
    (e: unknown) => e instanceof AppError && e.code === "STORE_DIGEST_MISMATCH" && /expected sha256:/.test(e.message),
  );
  assert.equal(await store.has(claimed), false);
  assert.equal(await store.has(sha("actual content")), false);
  assert.deepEqual(await fs.readdir(store.dir), []);
});

test("a failing source stream leaves nothing behind", async () => {
  const store = new BlobStore(await tempRoot());
  const failing = new Readable({
    read() {
      this.push(Buffer.from("partial"));
      this.destroy(new Error("connection reset"));
    },
  });
  await assert.rejects(store.put(failing), /connection reset/);
  assert.deepEqual(await fs.readdir(store.dir), []);
});

test("concurrent puts of the same content end with one correct blob", async () => {
  const store = new BlobStore(await tempRoot());
  const data = Buffer.alloc(200_000, 7);
  const results = await Promise.all(
    Array.from({ length: 8 }, () =>
      store.put(Readable.from([data.subarray(0, 100_000), data.subarray(100_000)]), sha(data)),
    ),
  );
  assert.ok(results.every((r) => r.digest === sha(data) && r.size === data.length));
  assert.equal(results.filter((r) => r.created).length, 1, "exactly one put created the blob");
  assert.deepEqual(await fs.readdir(store.dir), [`sha256-${sha(data).slice(7)}`]);
  assert.deepEqual(await fs.readFile(store.path(sha(data))), data);
});

test("importFile hashes a local file and stores it once", async () => {
  const root = await tempRoot();
  const store = new BlobStore(root);
  const src = path.join(root, "model.gguf");
  await fs.writeFile(src, "GGUF pretend weights");
  const first = await store.importFile(src);
  assert.deepEqual(first, { digest: sha("GGUF pretend weights"), size: 20, created: true });
  assert.equal(await fs.readFile(store.path(first.digest), "utf8"), "GGUF pretend weights");
  assert.equal((await store.importFile(src)).created, false);
  await assert.rejects(
    store.importFile(src, sha("other")),
    (e: unknown) => e instanceof AppError && e.code === "STORE_DIGEST_MISMATCH",
  );
});

test("list shows complete blobs only; remove deletes one", async () => {
  const store = new BlobStore(await tempRoot());
  assert.deepEqual(await store.list(), []);
  const a = await store.put(Buffer.from("a"));
  const b = await store.put(Buffer.from("bb"));
  await fs.writeFile(path.join(store.dir, "tmp-abc-partial"), "junk");
  const listed = await store.list();
  assert.deepEqual(listed.map((x) => x.digest).sort(), [a.digest, b.digest].sort());
  assert.equal(listed.find((x) => x.digest === b.digest)?.size, 2);
  assert.equal(await store.remove(a.digest), true);
  assert.equal(await store.remove(a.digest), false);
  assert.equal(await store.has(a.digest), false);
  assert.deepEqual(
    (await store.list()).map((x) => x.digest),
    [b.digest],
  );
});
