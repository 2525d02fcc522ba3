// Minimal GGUF v3 reader for tests: header, metadata and tensor infos (not tensor data), read incrementally so a
// 1 GiB file costs only its header. It checks what the writer promises: magic, version, alignment of the data section.
import fs from "node:fs";
import {
  alignUp,
  DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_TYPE,
  tensorByteSize,
  type GgmlType,
  type GgufMetadata,
  type GgufScalarType,
  type GgufScalarValue,
  type GgufValue,
  type TensorInfo,
} from "./types.ts";

export interface GgufFileInfo {
  version: number;
  metadata: GgufMetadata;
  tensors: TensorInfo[];
  alignment: number;
  /** Absolute file offset of the tensor data section. */
  dataOffset: number;
  fileSize: number;
}

/** Reads forward through a file descriptor, pulling more bytes only when a value needs them. */
class FileCursor {
  private buf = Buffer.alloc(0);
  private start = 0; // file offset of buf[0]
  pos = 0; // absolute file offset
  private readonly fd: number;
  constructor(fd: number) {
    this.fd = fd;
  }

  private take(n: number): Buffer {
    if (this.pos + n > this.start + this.buf.length) {
      const want = Math.max(n, 1 << 16);
      const next = Buffer.alloc(want);
      const got = fs.readSync(this.fd, next, 0, want, this.pos);
      if (got < n)
        throw new Error(`truncated GGUF file: wanted ${n} bytes at offset ${this.pos}, file ends after ${got}`);
      this.buf = next.subarray(0, got);
      this.start = this.pos;
    }
    const at = this.pos - this.start;
    this.pos += n;
    return this.buf.subarray(at, at + n);
  }
  u8() {
    return this.take(1).readUInt8(0);
  }
  i8() {
    return this.take(1).readInt8(0);
  }
  u16() {
    return this.take(2).readUInt16LE(0);
  }
  i16() {
    return this.take(2).readInt16LE(0);
  }
  u32() {
    return this.take(4).readUInt32LE(0);
  }
  i32() {
    return this.take(4).readInt32LE(0);
  }
  f32() {
    return this.take(4).readFloatLE(0);
  }
  f64() {
    return this.take(8).readDoubleLE(0);
  }
  u64() {
    return this.take(8).readBigUInt64LE(0);
  }
  i64() {
    return this.take(8).readBigInt64LE(0);
  }
  /** A u64 that must fit a JS number (counts, lengths, offsets). */
  size(what: string): number {
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${what} ${v} is too large`);
    return Number(v);
  }
  str() {
    return this.take(this.size("string length")).toString("utf8");
  }
}

function readScalar(c: FileCursor, type: number): GgufScalarValue {
  switch (type) {
    case GGUF_TYPE.UINT8:
      return c.u8();
    case GGUF_TYPE.INT8:
      return c.i8();
    case GGUF_TYPE.UINT16:
      return c.u16();
    case GGUF_TYPE.INT16:
      return c.i16();
    case GGUF_TYPE.UINT32:
      return c.u32();
    case GGUF_TYPE.INT32:
      return c.i32();
    case GGUF_TYPE.FLOAT32:
      return c.f32();
    case GGUF_TYPE.BOOL:
      return c.u8() !== 0;
    case GGUF_TYPE.STRING:
      return c.str();
    case GGUF_TYPE.UINT64:
      return c.u64();
    case GGUF_TYPE.INT64:
      return c.i64();
    case GGUF_TYPE.FLOAT64:
      return c.f64();
    default:
      throw new Error(`unknown GGUF value type ${type} at offset ${c.pos}`);
  }
}

function readValue(c: FileCursor): GgufValue {
  const type = c.u32();
  if (type !== GGUF_TYPE.ARRAY) return { type, value: readScalar(c, type) } as GgufValue;
  const elemType = c.u32() as GgufScalarType;
  const n = c.size("array length");
  const value: GgufScalarValue[] = new Array(n);
  for (let i = 0; i < n; i++) value[i] = readScalar(c, elemType);
  return { type: GGUF_TYPE.ARRAY, elemType, value };
}

export function readGgufInfo(file: string): GgufFileInfo {
  const fd = fs.openSync(file, "r");
  try {
    const c = new FileCursor(fd);
    const magic = c.u32();
    if (magic !== GGUF_MAGIC) throw new Error(`${file} is not a GGUF file (magic 0x${magic.toString(16)})`);
    const version = c.u32();
    if (version !== 3) throw new Error(`${file}: unsupported GGUF version ${version}`);
    const nTensors = c.size("tensor count");
    const nKv = c.size("metadata count");
    const metadata: GgufMetadata = {};
    for (let i = 0; i < nKv; i++) {
      const key = c.str();
      if (key in metadata) throw new Error(`${file}: duplicate metadata key ${key}`);
      metadata[key] = readValue(c);
    }
    const tensors: TensorInfo[] = [];
    for (let i = 0; i < nTensors; i++) {
      const name = c.str();
      const nDims = c.u32();
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(c.size("dimension"));
      const type = c.u32() as GgmlType;
      tensors.push({ name, dims, type, offset: c.size("tensor offset") });
    }
    const al = metadata["general.alignment"];
    const alignment = al && al.type === GGUF_TYPE.UINT32 ? al.value : DEFAULT_ALIGNMENT;
    const dataOffset = alignUp(c.pos, alignment);
    const fileSize = fs.fstatSync(fd).size;
    for (const t of tensors) {
      if (t.offset % alignment !== 0)
        throw new Error(`${file}: tensor ${t.name} offset ${t.offset} is not aligned to ${alignment}`);
      const end = dataOffset + t.offset + tensorByteSize(t.type, t.dims);
      if (end > fileSize)
        throw new Error(`${file}: tensor ${t.name} ends at ${end}, past the end of the file (${fileSize})`);
    }
    return { version, metadata, tensors, alignment, dataOffset, fileSize };
  } finally {
    fs.closeSync(fd);
  }
}

/** The raw bytes of one tensor (small tensors in tests). */
export function readTensorBytes(file: string, info: GgufFileInfo, name: string): Buffer {
  const t = info.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`${file} has no tensor ${name}`);
  const buf = Buffer.alloc(tensorByteSize(t.type, t.dims));
  const fd = fs.openSync(file, "r");
  try {
    fs.readSync(fd, buf, 0, buf.length, info.dataOffset + t.offset);
  } finally {
    fs.closeSync(fd);
  }
  return buf;
}

/** A metadata value's payload, for assertions; throws when the key is missing. */
export function metaValue(info: GgufFileInfo, key: string): GgufValue["value"] {
  const v = info.metadata[key];
  if (!v) throw new Error(`missing metadata key ${key}`);
  return v.value;
}
