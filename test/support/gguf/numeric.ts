// Number formats of tensor data: float16 conversion (as ggml does it), Q8_0 block quantization, and a deterministic
// PRNG so that a seed fully determines a generated model's bytes.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → float16 bits, round to nearest even; overflow → ±Inf, NaN stays NaN. */
export function f32ToF16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal half: shift the full significand, then round half to even on the dropped bits.
    const m = mant | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let r = m >>> shift;
    if (rest > half || (rest === half && r & 1)) r++;
    return sign | r;
  }
  let r = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, which is the correctly rounded result (up to Inf).
  if (rest > 0x1000 || (rest === 0x1000 && r & 1)) r++;
  return sign | r;
}

/** float16 bits → number. */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export const Q8_0_BLOCK = 32;
export const Q8_0_BLOCK_BYTES = 34;

// C's roundf: halves away from zero (Math.round rounds -2.5 to -2).
const roundAway = (x: number): number => Math.sign(x) * Math.round(Math.abs(x));

/**
 * Quantizes 32 floats into one Q8_0 block at out[offset]: f16 scale d = max|x|/127, then round(x/d) as int8, computed
 * in float32 like ggml's quantize_row_q8_0_ref so the bytes match llama.cpp's own quantizer.
 */
export function quantizeQ8_0Block(values: ArrayLike<number>, out: Buffer, offset: number): void {
  let amax = 0;
  for (let j = 0; j < Q8_0_BLOCK; j++) amax = Math.max(amax, Math.abs(values[j] ?? 0));
  const d = Math.fround(amax / 127);
  const id = d ? Math.fround(1 / d) : 0;
  out.writeUInt16LE(f32ToF16(d), offset);
  for (let j = 0; j < Q8_0_BLOCK; j++)
    out.writeInt8(roundAway(Math.fround(Math.fround(values[j] ?? 0) * id)), offset + 2 + j);
}

/** Decodes Q8_0 blocks back to floats (for tests and checks). */
export function dequantizeQ8_0(buf: Buffer): Float32Array {
  const nBlocks = buf.length / Q8_0_BLOCK_BYTES;
  const out = new Float32Array(nBlocks * Q8_0_BLOCK);
  for (let b = 0; b < nBlocks; b++) {
    const o = b * Q8_0_BLOCK_BYTES;
    const d = f16ToF32(buf.readUInt16LE(o));
    for (let j = 0; j < Q8_0_BLOCK; j++) out[b * Q8_0_BLOCK + j] = d * buf.readInt8(o + 2 + j);
  }
  return out;
}

export interface Rng {
  /** Next raw 32-bit unsigned value. */
  next(): number;
  /** Uniform in (0, 1). */
  uniform(): number;
  /** Standard normal (Box–Muller). */
  gauss(): number;
}

/** xorshift32: tiny, fast and identical on every platform, which is all random test weights need. */
export function makeRng(seed = 1234): Rng {
  let s = seed >>> 0 || 1;
  const next = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  const uniform = (): number => (next() + 0.5) / 4294967296;
  const gauss = (): number => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  return { next, uniform, gauss };
}
