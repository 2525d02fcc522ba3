import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { readGgufHeader } from "../../../server/gguf/reader.ts";
import { readGgufInfo } from "../../support/gguf/reader.ts";
import { GGML_TYPE, GGUF_TYPE, kv } from "../../support/gguf/types.ts";
import { fillF32, writeGguf } from "../../support/gguf/writer.ts";
import { tinyModelPath } from "../../support/models.ts";

const tempDir = () => fs.mkdtemp(path.join(os.tmpdir(), "gantry-gguf-reader-"));
const invalidFile = (pattern: RegExp) => (e: unknown) =>
  e instanceof AppError && e.code === "MODEL_INVALID_FILE" && pattern.test(e.message);

// Little-endian header pieces for hand-made (broken) files.
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u64 = (n: number | bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};
const str = (s: string) => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
const header = (version: number, tensors: number, kvs: number) =>
  Buffer.concat([Buffer.from("GGUF"), u32(version), u64(tensors), u64(kvs)]);

test("reads the tiny model's metadata and tensor infos as the test reader sees them", async () => {
  const file = await tinyModelPath();
  const expected = readGgufInfo(file);
  const got = await readGgufHeader(file);
  assert.equal(got.version, expected.version);
  assert.deepEqual([...got.metadata.keys()].sort(), Object.keys(expected.metadata).sort());
  for (const [key, v] of Object.entries(expected.metadata)) {
    const want =
      v.type === GGUF_TYPE.ARRAY
        ? v.value.map((x) => (typeof x === "bigint" ? Number(x) : x))
        : typeof v.value === "bigint"
          ? Number(v.value)
          : v.value;
    if (v.type === GGUF_TYPE.FLOAT32 || (v.type === GGUF_TYPE.ARRAY && v.elemType === GGUF_TYPE.FLOAT32)) {
      assert.deepEqual(
        got.metadata.get(key),
        typeof want === "number" ? Math.fround(want) : (want as number[]).map(Math.fround),
        key,
      );
    } else {
      assert.deepEqual(got.metadata.get(key), want, key);
    }
  }
  assert.deepEqual(
    got.tensors.map((t) => [t.name, t.dims, t.type]),
    expected.tensors.map((t) => [t.name, t.dims, t.type]),
  );
});

test("a header larger than the first read is read in full", async () => {
  const file = path.join(await tempDir(), "big-header.gguf");
  const long = "x".repeat(3 << 20);
  await writeGguf(file, { "general.architecture": kv.str("llama"), "general.license": kv.str(long) }, [
    { name: "w", dims: [4], type: GGML_TYPE.F32, fill: fillF32(() => 1) },
  ]);
  const got = await readGgufHeader(file);
  assert.equal(got.metadata.get("general.license"), long);
  assert.deepEqual(
    got.tensors.map((t) => t.name),
    ["w"],
  );
});

test("corrupt or hostile headers fail fast with MODEL_INVALID_FILE", async () => {
  const dir = await tempDir();
  const cases: [string, Buffer, RegExp][] = [
    ["no magic", Buffer.from("PK\u0003\u0004 not a gguf at all"), /magic/],
    ["text after magic", Buffer.from("GGUF, then no valid header"), /version/],
    ["old version", header(1, 0, 0), /version 1/],
    ["too many keys", header(3, 0, 1_000_000), /do not fit/],
    ["huge key length", Buffer.concat([header(3, 0, 1), u64(10n ** 12n), Buffer.alloc(16)]), /runs past the end/],
    [
      "huge string value",
      Buffer.concat([header(3, 0, 1), str("k"), u32(8), u64(10n ** 12n), Buffer.from("xyz")]),
      /runs past the end/,
    ],
    [
      "huge array",
      Buffer.concat([header(3, 0, 1), str("k"), u32(9), u32(4), u64(1_000_000_000), Buffer.from("xyz")]),
      /array of 1000000000/,
    ],
    ["unknown type", Buffer.concat([header(3, 0, 1), str("k"), u32(42), Buffer.alloc(16)]), /unknown value type 42/],
    ["truncated value", Buffer.concat([header(3, 0, 1), str("k"), u32(10), Buffer.alloc(3)]), /truncated/],
    ["too many dims", Buffer.concat([header(3, 1, 0), str("t"), u32(99), Buffer.alloc(64)]), /99 dimensions/],
  ];
  for (const [label, bytes, pattern] of cases) {
    const file = path.join(dir, `${label.replaceAll(" ", "-")}.gguf`);
    await fs.writeFile(file, bytes);
    await assert.rejects(readGgufHeader(file), invalidFile(pattern), label);
  }
  await assert.rejects(readGgufHeader(path.join(dir, "missing.gguf")), invalidFile(/cannot open/));
});
