// GGUF v3 writer. Layout: header | metadata KVs | tensor infos | pad to alignment | tensor data, each tensor padded
// to the alignment. Tensor data is produced row chunk by row chunk and streamed to a temp file that is renamed into
// place at the end, so a 1 GiB model never sits in memory and readers never see a half-written file.
import fsp from "node:fs/promises";
import path from "node:path";
import { f32ToF16, quantizeQ8_0Block, Q8_0_BLOCK, Q8_0_BLOCK_BYTES, type Rng } from "./numeric.ts";
import {
  alignUp,
  DEFAULT_ALIGNMENT,
  GGML_TYPE,
  GGUF_MAGIC,
  GGUF_TYPE,
  GGUF_VERSION,
  rowByteSize,
  tensorByteSize,
  type GgmlType,
  type GgufMetadata,
  type GgufScalarType,
  type GgufScalarValue,
  type TensorInfo,
} from "./types.ts";

/** The rows [firstRow, firstRow + rowCount) of a tensor, to be encoded into `out` (exactly rowCount rows long). */
export interface RowChunk {
  firstRow: number;
  rowCount: number;
  rowLength: number;
}
export type TensorFill = (out: Buffer, chunk: RowChunk) => void;

export interface TensorSpec {
  name: string;
  /** GGUF order: ne0 first (the row length, fastest varying). */
  dims: number[];
  type: GgmlType;
  fill: TensorFill;
}

export interface WrittenGguf {
  path: string;
  fileSize: number;
  dataOffset: number;
  tensors: TensorInfo[];
}

/** Growable little-endian byte sink for the header. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      const bigger = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
      this.buf.copy(bigger, 0, 0, this.length);
      this.buf = bigger;
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  // reserve() may replace this.buf, so it must run before this.buf is read.
  u8(v: number) {
    const at = this.reserve(1);
    this.buf.writeUInt8(v, at);
  }
  i8(v: number) {
    const at = this.reserve(1);
    this.buf.writeInt8(v, at);
  }
  u16(v: number) {
    const at = this.reserve(2);
    this.buf.writeUInt16LE(v, at);
  }
  i16(v: number) {
    const at = this.reserve(2);
    this.buf.writeInt16LE(v, at);
  }
  u32(v: number) {
    const at = this.reserve(4);
    this.buf.writeUInt32LE(v, at);
  }
  i32(v: number) {
    const at = this.reserve(4);
    this.buf.writeInt32LE(v, at);
  }
  f32(v: number) {
    const at = this.reserve(4);
    this.buf.writeFloatLE(v, at);
  }
  f64(v: number) {
    const at = this.reserve(8);
    this.buf.writeDoubleLE(v, at);
  }
  u64(v: number | bigint) {
    const at = this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), at);
  }
  i64(v: number | bigint) {
    const at = this.reserve(8);
    this.buf.writeBigInt64LE(BigInt(v), at);
  }
  str(s: string) {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    const at = this.reserve(bytes.length);
    bytes.copy(this.buf, at);
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(sink: ByteSink, type: GgufScalarType, v: GgufScalarValue, key: string): void {
  const expect = (kind: string, ok: boolean) => {
    if (!ok) throw new Error(`metadata ${key}: expected ${kind}, got ${typeof v}`);
  };
  if (type === GGUF_TYPE.STRING) {
    expect("string", typeof v === "string");
    sink.str(v as string);
    return;
  }
  if (type === GGUF_TYPE.BOOL) {
    expect("boolean", typeof v === "boolean");
    sink.u8(v ? 1 : 0);
    return;
  }
  if (type === GGUF_TYPE.UINT64 || type === GGUF_TYPE.INT64) {
    expect("number or bigint", typeof v === "number" || typeof v === "bigint");
    if (type === GGUF_TYPE.UINT64) sink.u64(v as number | bigint);
    else sink.i64(v as number | bigint);
    return;
  }
  expect("number", typeof v === "number");
  const n = v as number;
  switch (type) {
    case GGUF_TYPE.UINT8:
      return sink.u8(n);
    case GGUF_TYPE.INT8:
      return sink.i8(n);
    case GGUF_TYPE.UINT16:
      return sink.u16(n);
    case GGUF_TYPE.INT16:
      return sink.i16(n);
    case GGUF_TYPE.UINT32:
      return sink.u32(n);
    case GGUF_TYPE.INT32:
      return sink.i32(n);
    case GGUF_TYPE.FLOAT32:
      return sink.f32(n);
    case GGUF_TYPE.FLOAT64:
      return sink.f64(n);
  }
}

function encodeHeader(metadata: GgufMetadata, infos: readonly TensorInfo[]): Buffer {
  const sink = new ByteSink();
  const entries = Object.entries(metadata);
  sink.u32(GGUF_MAGIC);
  sink.u32(GGUF_VERSION);
  sink.u64(infos.length);
  sink.u64(entries.length);
  for (const [key, val] of entries) {
    sink.str(key);
    sink.u32(val.type);
    if (val.type === GGUF_TYPE.ARRAY) {
      sink.u32(val.elemType);
      sink.u64(val.value.length);
      for (const e of val.value) writeScalar(sink, val.elemType, e, key);
    } else {
      writeScalar(sink, val.type, val.value, key);
    }
  }
  for (const t of infos) {
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(t.type);
    sink.u64(t.offset);
  }
  return sink.bytes();
}

function resolveAlignment(metadata: GgufMetadata, requested: number | undefined): number {
  const declared = metadata["general.alignment"];
  const fromMeta = declared && declared.type === GGUF_TYPE.UINT32 ? declared.value : undefined;
  if (requested !== undefined && fromMeta !== undefined && requested !== fromMeta) {
    throw new Error(`alignment ${requested} contradicts general.alignment = ${fromMeta}`);
  }
  const alignment = requested ?? fromMeta ?? DEFAULT_ALIGNMENT;
  if (!Number.isInteger(alignment) || alignment <= 0 || alignment % 8 !== 0)
    throw new Error(`alignment must be a positive multiple of 8, got ${alignment}`);
  return alignment;
}

/** Tensor offsets within the data section: each tensor starts aligned. Pure. */
export function layoutTensors(
  tensors: readonly Omit<TensorSpec, "fill">[],
  alignment = DEFAULT_ALIGNMENT,
): TensorInfo[] {
  const seen = new Set<string>();
  let offset = 0;
  return tensors.map((t) => {
    if (seen.has(t.name)) throw new Error(`duplicate tensor name ${t.name}`);
    seen.add(t.name);
    if (t.dims.length < 1 || t.dims.length > 4 || t.dims.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new Error(`tensor ${t.name}: dims must be 1 to 4 positive integers, got [${t.dims.join(", ")}]`);
    }
    const info: TensorInfo = { name: t.name, dims: [...t.dims], type: t.type, offset };
    offset = alignUp(offset + tensorByteSize(t.type, t.dims), alignment);
    return info;
  });
}

const CHUNK_BYTES = 4 << 20;

/** Writes a GGUF file atomically (temp file + rename). Alignment comes from general.alignment when present. */
export async function writeGguf(
  file: string,
  metadata: GgufMetadata,
  tensors: readonly TensorSpec[],
  opts: { alignment?: number } = {},
): Promise<WrittenGguf> {
  const alignment = resolveAlignment(metadata, opts.alignment);
  const infos = layoutTensors(tensors, alignment);
  const header = encodeHeader(metadata, infos);
  const dataOffset = alignUp(header.length, alignment);
  const tmp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`,
  );
  const fh = await fsp.open(tmp, "w");
  let pos = 0;
  try {
    const write = async (buf: Buffer) => {
      await fh.write(buf, 0, buf.length, pos);
      pos += buf.length;
    };
    await write(header);
    await write(Buffer.alloc(dataOffset - header.length));
    let chunkBuf = Buffer.alloc(0);
    for (const [i, spec] of tensors.entries()) {
      const info = infos[i]!;
      const rowLength = spec.dims[0]!;
      const rows = spec.dims.slice(1).reduce((a, b) => a * b, 1);
      const rowBytes = rowByteSize(spec.type, rowLength);
      await write(Buffer.alloc(dataOffset + info.offset - pos));
      const rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / rowBytes));
      for (let firstRow = 0; firstRow < rows; firstRow += rowsPerChunk) {
        const rowCount = Math.min(rowsPerChunk, rows - firstRow);
        const size = rowCount * rowBytes;
        if (chunkBuf.length < size) chunkBuf = Buffer.alloc(size);
        const out = chunkBuf.subarray(0, size);
        out.fill(0);
        spec.fill(out, { firstRow, rowCount, rowLength });
        await write(out);
      }
    }
    // Pad the end too, so the file size is a multiple of the alignment as llama.cpp's writer leaves it.
    await write(Buffer.alloc(alignUp(pos, alignment) - pos));
  } catch (e) {
    await fh.close();
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await fsp.rename(tmp, file);
  return { path: file, fileSize: pos, dataOffset, tensors: infos };
}

// ---- fills: `valueAt(i)` gets the element index within the whole tensor (row-major, ne0 fastest) ----

export type ValueAt = (index: number) => number;

export function fillF32(valueAt: ValueAt): TensorFill {
  return (out, { firstRow, rowCount, rowLength }) => {
    const base = firstRow * rowLength;
    for (let i = 0; i < rowCount * rowLength; i++) out.writeFloatLE(valueAt(base + i), i * 4);
  };
}

export function fillF16(valueAt: ValueAt): TensorFill {
  return (out, { firstRow, rowCount, rowLength }) => {
    const base = firstRow * rowLength;
    for (let i = 0; i < rowCount * rowLength; i++) out.writeUInt16LE(f32ToF16(valueAt(base + i)), i * 2);
  };
}

export function fillQ8_0(valueAt: ValueAt): TensorFill {
  const block = new Float32Array(Q8_0_BLOCK);
  return (out, { firstRow, rowCount, rowLength }) => {
    const base = firstRow * rowLength;
    const nBlocks = (rowCount * rowLength) / Q8_0_BLOCK;
    for (let b = 0; b < nBlocks; b++) {
      for (let j = 0; j < Q8_0_BLOCK; j++) block[j] = valueAt(base + b * Q8_0_BLOCK + j);
      quantizeQ8_0Block(block, out, b * Q8_0_BLOCK_BYTES);
    }
  };
}

/** Fills with one value per element using the tensor's own type (F32, F16 or Q8_0). */
export function fillTyped(type: GgmlType, valueAt: ValueAt): TensorFill {
  return type === GGML_TYPE.F32 ? fillF32(valueAt) : type === GGML_TYPE.F16 ? fillF16(valueAt) : fillQ8_0(valueAt);
}

/**
 * Fast Q8_0 fill for huge benchmark tensors: random int8 quants in [-64, 63] with one constant scale, so a weight's
 * value is q * scale (std ≈ 37 * scale). Per-element quantization would take minutes for a 1.1 B model.
 */
export function fillQ8_0Random(rng: Rng, scale: number): TensorFill {
  const h = f32ToF16(scale);
  return (out) => {
    const nBlocks = out.length / Q8_0_BLOCK_BYTES;
    for (let b = 0; b < nBlocks; b++) {
      const o = b * Q8_0_BLOCK_BYTES;
      out[o] = h & 0xff;
      out[o + 1] = h >> 8;
      for (let j = 0; j < Q8_0_BLOCK; j += 4) {
        const r = rng.next();
        out[o + 2 + j] = ((r & 0x7f) - 64) & 0xff;
        out[o + 3 + j] = (((r >>> 8) & 0x7f) - 64) & 0xff;
        out[o + 4 + j] = (((r >>> 16) & 0x7f) - 64) & 0xff;
        out[o + 5 + j] = (((r >>> 24) & 0x7f) - 64) & 0xff;
      }
    }
  };
}

/**
 * Q8_0 blocks copied from `pool` (whole blocks, e.g. made by fillQ8_0Random), each chunk from a random block offset:
 * for GPU-sized benchmark models (8 GB), written at disk speed instead of minutes of per-byte random numbers. The
 * weights repeat with the pool's period, which no kernel's speed depends on.
 */
export function fillFromPool(pool: Buffer, rng: Rng): TensorFill {
  const blocks = pool.length / Q8_0_BLOCK_BYTES;
  if (!Number.isInteger(blocks) || blocks < 1)
    throw new Error(`a Q8_0 pool holds whole blocks, not ${pool.length} bytes`);
  return (out) => {
    let o = 0;
    while (o < out.length) {
      const start = (rng.next() % blocks) * Q8_0_BLOCK_BYTES;
      o += pool.copy(out, o, start, Math.min(pool.length, start + out.length - o));
    }
  };
}

/**
 * Wraps a fill so chosen rows get exact values instead (encoded in the tensor's type): `rowValues(row)` returns the
 * row's values (missing trailing values are 0, so [] is a zero row), or undefined to keep the base fill's output. The
 * base fill still runs first, so a seeded PRNG advances
 * exactly as without overrides.
 */
export function withRowOverrides(
  type: GgmlType,
  base: TensorFill,
  rowValues: (row: number) => ArrayLike<number> | undefined,
): TensorFill {
  return (out, chunk) => {
    base(out, chunk);
    const rowBytes = rowByteSize(type, chunk.rowLength);
    for (let r = 0; r < chunk.rowCount; r++) {
      const values = rowValues(chunk.firstRow + r);
      if (!values) continue;
      const rowOut = out.subarray(r * rowBytes, (r + 1) * rowBytes);
      fillTyped(type, (i) => values[i] ?? 0)(rowOut, { firstRow: 0, rowCount: 1, rowLength: chunk.rowLength });
    }
  };
}
