import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { dequantizeQ8_0, f16ToF32, makeRng } from "../../../support/gguf/numeric.ts";
import { readGgufInfo, readTensorBytes } from "../../../support/gguf/reader.ts";
import { GGML_TYPE, GGUF_TYPE, kv, type GgufMetadata } from "../../../support/gguf/types.ts";
import {
  fillF16,
  fillF32,
  fillFromPool,
  fillQ8_0,
  fillQ8_0Random,
  layoutTensors,
  writeGguf,
  type RowChunk,
} from "../../../support/gguf/writer.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gguf-writer-test-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const metadata: GgufMetadata = {
  "general.alignment": kv.u32(64),
  "t.u8": kv.u8(255),
  "t.i8": kv.i8(-128),
  "t.u16": kv.u16(65535),
  "t.i16": kv.i16(-32768),
  "t.u32": kv.u32(4294967295),
  "t.i32": kv.i32(-2147483648),
  "t.f32": kv.f32(3.14159),
  "t.bool.true": kv.bool(true),
  "t.bool.false": kv.bool(false),
  "t.str": kv.str("héllo ▁wörld 🚀"),
  "t.str.empty": kv.str(""),
  "t.u64": kv.u64(2n ** 64n - 1n),
  "t.u64.number": kv.u64(123456789012),
  "t.i64": kv.i64(-(2n ** 63n)),
  "t.f64": kv.f64(Math.PI),
  "t.arr.str": kv.arr(GGUF_TYPE.STRING, ["<s>", "", "▁the", "日本"]),
  "t.arr.i32": kv.arr(GGUF_TYPE.INT32, [1, -2, 2147483647]),
  "t.arr.f32": kv.arr(GGUF_TYPE.FLOAT32, [0.5, -1.25, 0.1]),
  "t.arr.bool": kv.arr(GGUF_TYPE.BOOL, [true, false]),
  "t.arr.u8.empty": kv.arr(GGUF_TYPE.UINT8, []),
};

describe("writeGguf → readGgufInfo round trip", () => {
  it("preserves metadata of every type, tensor infos, alignment and data", async () => {
    const file = path.join(dir, "roundtrip.gguf");
    const written = await writeGguf(file, metadata, [
      { name: "a.f32", dims: [3], type: GGML_TYPE.F32, fill: fillF32((i) => i + 0.5) },
      { name: "b.f16", dims: [5, 2], type: GGML_TYPE.F16, fill: fillF16((i) => -i) },
      { name: "c.q8_0", dims: [64, 3], type: GGML_TYPE.Q8_0, fill: fillQ8_0((i) => (i % 7) - 3) },
    ]);
    const info = readGgufInfo(file);

    assert.equal(info.version, 3);
    assert.equal(info.alignment, 64);
    assert.deepEqual(Object.keys(info.metadata), Object.keys(metadata));
    for (const [key, want] of Object.entries(metadata)) {
      const got = info.metadata[key]!;
      assert.equal(got.type, want.type, key);
      if (want.type === GGUF_TYPE.FLOAT32) assert.equal(got.value, Math.fround(want.value), key);
      else if (want.type === GGUF_TYPE.UINT64 || want.type === GGUF_TYPE.INT64)
        assert.equal(got.value, BigInt(want.value), key);
      else if (want.type === GGUF_TYPE.ARRAY && want.elemType === GGUF_TYPE.FLOAT32) {
        assert.deepEqual(
          got.value,
          want.value.map((v) => Math.fround(v as number)),
          key,
        );
      } else assert.deepEqual(got.value, want.value, key);
    }

    assert.deepEqual(
      info.tensors.map((t) => [t.name, t.dims, t.type]),
      [
        ["a.f32", [3], GGML_TYPE.F32],
        ["b.f16", [5, 2], GGML_TYPE.F16],
        ["c.q8_0", [64, 3], GGML_TYPE.Q8_0],
      ],
    );
    // 12 bytes, then 20 bytes: each next tensor starts on the next multiple of 64.
    assert.deepEqual(
      info.tensors.map((t) => t.offset),
      [0, 64, 128],
    );
    assert.deepEqual(written.tensors, info.tensors);
    assert.equal(info.dataOffset % 64, 0);
    assert.equal(info.dataOffset, written.dataOffset);
    assert.equal(info.fileSize, fs.statSync(file).size);
    assert.equal(info.fileSize, written.fileSize);
    assert.equal(info.fileSize % 64, 0);
    // last tensor: 3 rows x 2 blocks x 34 = 204 bytes at 128, padded to 384
    assert.equal(info.fileSize, info.dataOffset + 384);

    const a = readTensorBytes(file, info, "a.f32");
    assert.deepEqual(
      [0, 1, 2].map((i) => a.readFloatLE(i * 4)),
      [0.5, 1.5, 2.5],
    );
    const b = readTensorBytes(file, info, "b.f16");
    assert.deepEqual(
      Array.from({ length: 10 }, (_, i) => f16ToF32(b.readUInt16LE(i * 2))),
      Array.from({ length: 10 }, (_, i) => -i),
    );
    const c = dequantizeQ8_0(readTensorBytes(file, info, "c.q8_0"));
    assert.equal(c.length, 192);
    // Q8_0 is lossy: within half a step (3/127/2) plus the f16 rounding of the scale.
    c.forEach((v, i) => assert.ok(Math.abs(v - ((i % 7) - 3)) < 0.015, `element ${i}: ${v}`));
  });

  it("streams big tensors in row chunks and writes rows in order", async () => {
    const file = path.join(dir, "chunked.gguf");
    const rows = 1100,
      rowLength = 1024; // 4.4 MB of F32: more than one chunk
    const chunks: RowChunk[] = [];
    const valueFill = fillF32((i) => i);
    await writeGguf(file, {}, [
      {
        name: "big",
        dims: [rowLength, rows],
        type: GGML_TYPE.F32,
        fill: (out, chunk) => {
          chunks.push(chunk);
          valueFill(out, chunk);
        },
      },
    ]);
    assert.ok(chunks.length > 1, "expected several chunks");
    assert.equal(
      chunks.reduce((n, c) => n + c.rowCount, 0),
      rows,
    );
    chunks.forEach((c, i) => assert.equal(c.firstRow, i === 0 ? 0 : chunks[i - 1]!.firstRow + chunks[i - 1]!.rowCount));
    const info = readGgufInfo(file);
    assert.equal(info.alignment, 32);
    const data = readTensorBytes(file, info, "big");
    for (const i of [
      0,
      1,
      rowLength * chunks[0]!.rowCount - 1,
      rowLength * chunks[0]!.rowCount,
      rows * rowLength - 1,
    ]) {
      assert.equal(data.readFloatLE(i * 4), i);
    }
  });

  it("leaves no file (and no temp file) behind when a fill throws", async () => {
    const sub = fs.mkdtempSync(path.join(dir, "fail-"));
    const file = path.join(sub, "broken.gguf");
    await assert.rejects(
      writeGguf(file, {}, [
        {
          name: "x",
          dims: [4],
          type: GGML_TYPE.F32,
          fill: () => {
            throw new Error("fill failed");
          },
        },
      ]),
      /fill failed/,
    );
    assert.deepEqual(fs.readdirSync(sub), []);
  });

  it("rejects inconsistent input with clear messages", async () => {
    const file = path.join(dir, "invalid.gguf");
    const f = fillF32(() => 0);
    await assert.rejects(
      writeGguf(file, { "general.alignment": kv.u32(32) }, [], { alignment: 64 }),
      /contradicts general.alignment/,
    );
    await assert.rejects(
      writeGguf(file, {}, [{ name: "q", dims: [48], type: GGML_TYPE.Q8_0, fill: f }]),
      /multiple of the block size 32/,
    );
    await assert.rejects(writeGguf(file, { k: kv.str(5 as unknown as string) }, []), /metadata k: expected string/);
    assert.throws(
      () =>
        layoutTensors([
          { name: "t", dims: [4], type: GGML_TYPE.F32 },
          { name: "t", dims: [4], type: GGML_TYPE.F32 },
        ]),
      /duplicate tensor name t/,
    );
    assert.throws(() => layoutTensors([{ name: "t", dims: [0], type: GGML_TYPE.F32 }]), /positive integers/);
    assert.equal(fs.existsSync(file), false);
  });

  it("reader rejects files that are not GGUF or are truncated", async () => {
    const notGguf = path.join(dir, "not.gguf");
    fs.writeFileSync(notGguf, "hello world, not a model");
    assert.throws(() => readGgufInfo(notGguf), /not a GGUF file/);
    const whole = path.join(dir, "whole.gguf");
    await writeGguf(whole, { "general.name": kv.str("x") }, [
      { name: "t", dims: [64], type: GGML_TYPE.F32, fill: fillF32(() => 1) },
    ]);
    const cut = path.join(dir, "cut.gguf");
    fs.writeFileSync(cut, fs.readFileSync(whole).subarray(0, fs.statSync(whole).size - 40));
    assert.throws(() => readGgufInfo(cut), /past the end of the file/);
    fs.writeFileSync(cut, fs.readFileSync(whole).subarray(0, 30));
    assert.throws(() => readGgufInfo(cut), /truncated GGUF file/);
  });
});

describe("fillFromPool", () => {
  it("copies whole blocks of the pool into every chunk, from seeded offsets", () => {
    const pool = Buffer.alloc(34 * 5);
    fillQ8_0Random(makeRng(3), 0.01)(pool, { firstRow: 0, rowCount: 1, rowLength: 5 * 32 });
    const blocks = new Set(Array.from({ length: 5 }, (_, i) => pool.subarray(i * 34, i * 34 + 34).toString("hex")));
    const out = Buffer.alloc(34 * 12);
    fillFromPool(pool, makeRng(9))(out, { firstRow: 0, rowCount: 12, rowLength: 32 });
    for (let i = 0; i < 12; i++) assert.ok(blocks.has(out.subarray(i * 34, i * 34 + 34).toString("hex")), `block ${i}`);
    const again = Buffer.alloc(out.length);
    fillFromPool(pool, makeRng(9))(again, { firstRow: 0, rowCount: 12, rowLength: 32 });
    assert.deepEqual(again, out);
    assert.throws(() => fillFromPool(Buffer.alloc(35), makeRng(1)), /whole blocks/);
  });
});
