import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parseDigest } from "../../../server/store/digest.ts";
import {
  CONFIG_MEDIA_TYPE,
  MANIFEST_MEDIA_TYPE,
  ManifestStore,
  layerMediaType,
  layersOf,
  referencedDigests,
  type Manifest,
} from "../../../server/store/manifests.ts";
import { formatModelName, parseModelName } from "../../../server/common/model-name.ts";

const d = (s: string) => parseDigest(`sha256:${createHash("sha256").update(s).digest("hex")}`);
const sample = (): Manifest => ({
  schemaVersion: 2,
  mediaType: MANIFEST_MEDIA_TYPE,
  config: { mediaType: CONFIG_MEDIA_TYPE, digest: d("config"), size: 10 },
  layers: [
    { mediaType: layerMediaType("model"), digest: d("model"), size: 1000 },
    { mediaType: layerMediaType("template"), digest: d("template"), size: 20 },
  ],
});

test("write/read round-trips at manifests/<host>/<namespace>/<model>/<tag>", async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-manifests-"));
  const store = new ManifestStore(root);
  const name = parseModelName("smollm2:135m");
  const digest = await store.write(name, sample());
  const file = path.join(root, "manifests", "gantry.local", "library", "smollm2", "135m");
  const body = await fs.readFile(file, "utf8");
  assert.deepEqual(JSON.parse(body), sample());
  assert.equal(digest, d(body), "digest is the sha256 of the manifest bytes");
  const read = await store.read(name);
  assert.ok(read);
  assert.deepEqual(read.manifest, sample());
  assert.equal(read.digest, digest);
  assert.equal(formatModelName(read.name), "smollm2:135m");
  assert.ok(read.modifiedAt instanceof Date);
  assert.deepEqual(
    layersOf(read.manifest, "template").map((l) => l.digest),
    [d("template")],
  );
  assert.deepEqual(referencedDigests(read.manifest), [d("config"), d("model"), d("template")]);
  assert.deepEqual(await fs.readdir(path.dirname(file)), ["135m"], "no temp file left behind");
});

test("lookups are case-insensitive and a differently-cased write replaces the old file", async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-manifests-"));
  const store = new ManifestStore(root);
  await store.write(parseModelName("SmolLM2:Big"), sample());
  assert.ok(await store.read(parseModelName("smollm2:big")));
  await store.write(parseModelName("smollm2:big"), sample());
  const all = await store.list();
  assert.deepEqual(
    all.map((m) => formatModelName(m.name)),
    ["smollm2:big"],
  );
});

test("list walks every manifest, skipping strays; delete removes the file and empty directories", async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-manifests-"));
  const store = new ManifestStore(root);
  assert.deepEqual(await store.list(), []);
  for (const n of ["a:1", "a:2", "alice/b", "hf.co/org/repo:Q4_K_M"]) await store.write(parseModelName(n), sample());
  await fs.writeFile(path.join(root, "manifests", "stray.txt"), "x");
  await fs.writeFile(path.join(root, "manifests", "gantry.local", "library", "a", "3"), "{not json");
  const names = (await store.list()).map((m) => formatModelName(m.name)).sort();
  assert.deepEqual(names, ["a:1", "a:2", "alice/b:latest", "hf.co/org/repo:Q4_K_M"]);

  assert.equal(await store.delete(parseModelName("hf.co/org/repo:q4_k_m")), true);
  assert.equal(await store.delete(parseModelName("hf.co/org/repo:q4_k_m")), false);
  assert.equal(await store.read(parseModelName("hf.co/org/repo:Q4_K_M")), null);
  await assert.rejects(fs.stat(path.join(root, "manifests", "hf.co")), { code: "ENOENT" });
  assert.ok(await store.read(parseModelName("a:1")));
});
