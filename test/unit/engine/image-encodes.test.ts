// The vision model's encode cache (image-encodes.ts) with stand-in encodings: one encode per image id, shared by
// concurrent users, the least recently used evicted past the byte bound but freed only when no request uses them, a
// failed encode not kept, and everything freed on clear.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ImageEncodes } from "../../../server/engine/image-encodes.ts";
import type { EncodedMedia } from "../../../server/engine/native/mtmd.ts";

function media(id: string, bytes: number, freed: string[]): EncodedMedia {
  return { id, bytes, nTokens: 1, nPos: 1, dispose: async () => void freed.push(id) } as unknown as EncodedMedia;
}

test("one encode per image id; concurrent users share it", async () => {
  const freed: string[] = [];
  const cache = new ImageEncodes(1000);
  let encodes = 0;
  const encode = async () => (encodes++, media("a", 10, freed));
  const seen = await Promise.all([1, 2, 3].map(() => cache.with("a", encode, async (m, encoded) => ({ m, encoded }))));
  assert.equal(encodes, 1);
  assert.deepEqual(
    seen.map((s) => s.encoded),
    [true, false, false],
  );
  assert.ok(seen.every((s) => s.m === seen[0]!.m));
  assert.deepEqual(freed, []);
});

test("past the bound the least recently used goes, freed once its user is done", async () => {
  const freed: string[] = [];
  const cache = new ImageEncodes(25);
  await cache.with(
    "a",
    async () => media("a", 10, freed),
    async () => undefined,
  );
  let release!: () => void;
  const using = cache.with(
    "b",
    async () => media("b", 10, freed),
    () => new Promise<void>((r) => (release = r)),
  );
  await new Promise((r) => setImmediate(r));
  // "a" is used again: "b" is now the least recent.
  await cache.with(
    "a",
    async () => assert.fail("a is kept"),
    async () => undefined,
  );
  await cache.with(
    "c",
    async () => media("c", 10, freed),
    async () => undefined,
  );
  assert.equal(cache.size, 2);
  assert.deepEqual(freed, [], "b is still in use");
  release();
  await using;
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(freed, ["b"]);
  let again = 0;
  await cache.with(
    "b",
    async () => (again++, media("b", 10, freed)),
    async () => undefined,
  );
  assert.equal(again, 1, "an evicted image is encoded again");
});

test("a failed encode is not kept; clear frees everything", async () => {
  const freed: string[] = [];
  const cache = new ImageEncodes();
  await assert.rejects(
    cache.with(
      "x",
      async () => Promise.reject(new Error("bad image")),
      async () => undefined,
    ),
    /bad image/,
  );
  assert.equal(cache.size, 0);
  await cache.with(
    "y",
    async () => media("y", 5, freed),
    async () => undefined,
  );
  await cache.clear();
  assert.equal(cache.size, 0);
  assert.deepEqual(freed, ["y"]);
});
