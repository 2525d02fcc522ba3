import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dequantizeQ8_0, f16ToF32, f32ToF16, makeRng, quantizeQ8_0Block } from "../../../support/gguf/numeric.ts";

describe("f32ToF16", () => {
  it("encodes known values (IEEE 754 binary16, round to nearest even)", () => {
    const cases: Array<[number, number]> = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [0.1, 0x2e66],
      [1 / 3, 0x3555],
      [65504, 0x7bff],
      [65520, 0x7c00],
      [1e6, 0x7c00],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
      [2 ** -14, 0x0400],
      [2 ** -24, 0x0001],
      [2 ** -25, 0x0000],
      [3 * 2 ** -26, 0x0001],
      [1 + 2 ** -11, 0x3c00],
      [1 + 3 * 2 ** -11, 0x3c02],
      [0.02, 0x251f],
    ];
    for (const [value, bits] of cases) assert.equal(f32ToF16(value), bits, `f32ToF16(${value})`);
  });

  it("keeps NaN a NaN", () => {
    const h = f32ToF16(NaN);
    assert.equal(h & 0x7c00, 0x7c00);
    assert.notEqual(h & 0x3ff, 0);
    assert.ok(Number.isNaN(f16ToF32(h)));
  });

  it("round-trips every finite half through f16ToF32", () => {
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) continue; // NaN payloads
      assert.equal(f32ToF16(f16ToF32(h)), h, `bits 0x${h.toString(16)}`);
    }
  });
});

describe("Q8_0", () => {
  it("quantizes a block with scale 1 exactly, rounding halves away from zero like C's roundf", () => {
    const values = new Array<number>(32).fill(0);
    Object.assign(values, { 0: 127, 1: -127, 2: 63.4, 3: 2.5, 4: -2.5, 5: 0.49, 6: -0.51 });
    const out = Buffer.alloc(34);
    quantizeQ8_0Block(values, out, 0);
    assert.equal(out.readUInt16LE(0), 0x3c00);
    assert.deepEqual(
      [...out.subarray(2, 9)].map((b) => (b << 24) >> 24),
      [127, -127, 63, 3, -3, 0, -1],
    );
    assert.ok(out.subarray(9).every((b) => b === 0));
  });

  it("quantizes a ramp -16..15 with scale 16/127", () => {
    const out = Buffer.alloc(34);
    quantizeQ8_0Block(
      Array.from({ length: 32 }, (_, j) => j - 16),
      out,
      0,
    );
    assert.equal(out.readUInt16LE(0), 0x3008);
    const q = [...out.subarray(2)].map((b) => (b << 24) >> 24);
    assert.equal(q[0], -127);
    assert.equal(q[8], -64); // -8 * 127/16 = -63.5
    assert.equal(q[16], 0);
    assert.equal(q[24], 64);
    assert.equal(q[31], 119);
  });

  it("encodes an all-zero block as zeros", () => {
    const out = Buffer.alloc(34, 0xff);
    quantizeQ8_0Block(new Float32Array(32), out, 0);
    assert.ok(out.every((b) => b === 0));
  });

  it("dequantizes within half a quantization step", () => {
    const rng = makeRng(5);
    const values = Float32Array.from({ length: 64 }, () => rng.gauss());
    const buf = Buffer.alloc(68);
    quantizeQ8_0Block(values.subarray(0, 32), buf, 0);
    quantizeQ8_0Block(values.subarray(32), buf, 34);
    const back = dequantizeQ8_0(buf);
    for (let b = 0; b < 2; b++) {
      const d = f16ToF32(buf.readUInt16LE(b * 34));
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        assert.ok(Math.abs(back[i]! - values[i]!) <= d * 0.51, `element ${i}: ${back[i]} vs ${values[i]}`);
      }
    }
  });
});

describe("makeRng", () => {
  it("is deterministic per seed and differs across seeds", () => {
    const a = makeRng(9),
      b = makeRng(9),
      c = makeRng(10);
    const sa = Array.from({ length: 5 }, () => a.next());
    assert.deepEqual(
      Array.from({ length: 5 }, () => b.next()),
      sa,
    );
    assert.notDeepEqual(
      Array.from({ length: 5 }, () => c.next()),
      sa,
    );
  });

  it("draws uniforms in (0, 1) and roughly standard normals", () => {
    const rng = makeRng(3);
    let sum = 0,
      sq = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const u = rng.uniform();
      assert.ok(u > 0 && u < 1);
      const g = rng.gauss();
      sum += g;
      sq += g * g;
    }
    assert.ok(Math.abs(sum / n) < 0.05);
    assert.ok(Math.abs(sq / n - 1) < 0.05);
  });
});
