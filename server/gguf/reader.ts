// A bounds-checked GGUF header reader (metadata key/values and tensor infos; never the weights). Files reach it from
// clients (blob uploads), so every length and count is checked against the file size before it is trusted: a corrupt
// or hostile header fails fast with MODEL_INVALID_FILE instead of allocating or looping without end.
import fs from "node:fs/promises";
import { AppError } from "../common/errors.ts";

export type GgufScalar = number | boolean | string;
export type GgufValue = GgufScalar | GgufValue[];

export interface GgufTensorInfo {
  name: string;
  dims: number[];
  type: number;
}

export interface GgufHeader {
  version: number;
  /** Keys as stored, e.g. "general.architecture" → "llama". 64-bit integers become numbers. */
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
}

const T = {
  U8: 0,
  I8: 1,
  U16: 2,
  I16: 3,
  U32: 4,
  I32: 5,
  F32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  U64: 10,
  I64: 11,
  F64: 12,
} as const;
const SCALAR_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const MIN_STRING = 8; // the u64 length prefix
const MAX_DIMS = 8;
const MAX_NESTING = 4;
const MAX_ARRAY = 1 << 24; // far above any real vocabulary (~262k) or merge list

const invalid = (why: string) => new AppError("MODEL_INVALID_FILE", `invalid GGUF header: ${why}`);

/** Thrown while parsing a prefix of the file that ends too early; the caller reads more and parses again. */
class NeedMore extends Error {}

class Cursor {
  pos = 0;
  private readonly buf: Buffer;
  private readonly fileSize: number;
  constructor(buf: Buffer, fileSize: number) {
    this.buf = buf;
    this.fileSize = fileSize;
  }

  private take(n: number): number {
    if (this.pos + n > this.fileSize) throw invalid(`truncated at byte ${this.pos} (needs ${n} more bytes)`);
    if (this.pos + n > this.buf.length) throw new NeedMore();
    const at = this.pos;
    this.pos += n;
    return at;
  }

  remaining(): number {
    return this.fileSize - this.pos;
  }
  u32(): number {
    return this.buf.readUInt32LE(this.take(4));
  }
  u64(): number {
    const v = this.buf.readBigUInt64LE(this.take(8));
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(`count ${v} is too large`);
    return Number(v);
  }
  string(): string {
    const len = this.u64();
    if (len > this.remaining())
      throw invalid(`string of ${len} bytes at byte ${this.pos} runs past the end of the file`);
    const at = this.take(len);
    return this.buf.toString("utf8", at, at + len);
  }
  scalar(type: number): GgufScalar {
    const size = SCALAR_SIZE[type];
    if (size === undefined) throw invalid(`unknown value type ${type}`);
    const at = this.take(size);
    switch (type) {
      case T.U8:
        return this.buf.readUInt8(at);
      case T.I8:
        return this.buf.readInt8(at);
      case T.U16:
        return this.buf.readUInt16LE(at);
      case T.I16:
        return this.buf.readInt16LE(at);
      case T.U32:
        return this.buf.readUInt32LE(at);
      case T.I32:
        return this.buf.readInt32LE(at);
      case T.F32:
        return this.buf.readFloatLE(at);
      case T.BOOL:
        return this.buf.readUInt8(at) !== 0;
      case T.U64:
        return Number(this.buf.readBigUInt64LE(at));
      case T.I64:
        return Number(this.buf.readBigInt64LE(at));
      default:
        return this.buf.readDoubleLE(at);
    }
  }
  value(type: number, depth = 0): GgufValue {
    if (type === T.STRING) return this.string();
    if (type !== T.ARRAY) return this.scalar(type);
    if (depth >= MAX_NESTING) throw invalid("arrays nested too deeply");
    const elemType = this.u32();
    const count = this.u64();
    const minSize = elemType === T.STRING ? MIN_STRING : elemType === T.ARRAY ? 12 : SCALAR_SIZE[elemType];
    if (minSize === undefined) throw invalid(`unknown array element type ${elemType}`);
    if (count > MAX_ARRAY || count * minSize > this.remaining())
      throw invalid(`array of ${count} elements runs past the end of the file`);
    const out: GgufValue[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = this.value(elemType, depth + 1);
    return out;
  }
}

/** Parses a header from the start of a file (`buf` may be a prefix of it; NeedMore asks for a longer one). */
function parseHeader(buf: Buffer, fileSize: number): GgufHeader {
  const c = new Cursor(buf, fileSize);
  if (buf.toString("latin1", 0, 4) !== "GGUF") throw invalid(`missing "GGUF" magic`);
  c.pos = 4;
  const version = c.u32();
  if (version !== 2 && version !== 3) throw invalid(`unsupported version ${version}`);
  const tensorCount = c.u64();
  const kvCount = c.u64();
  // Each key/value needs at least a string length and a type; each tensor info a name length, n_dims, type, offset.
  if (kvCount * 12 + tensorCount * 24 > c.remaining())
    throw invalid(`${kvCount} keys and ${tensorCount} tensors do not fit in the file`);
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.string();
    metadata.set(key, c.value(c.u32()));
  }
  const tensors: GgufTensorInfo[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = c.string();
    const nDims = c.u32();
    if (nDims > MAX_DIMS) throw invalid(`tensor "${name}" has ${nDims} dimensions`);
    const dims = Array.from({ length: nDims }, () => c.u64());
    const type = c.u32();
    c.u64(); // data offset
    tensors.push({ name, dims, type });
  }
  return { version, metadata, tensors };
}

const FIRST_READ = 1 << 20;
const MAX_HEADER = 512 << 20;

/** Reads a GGUF header, reading more of the file only while the header needs it. Throws MODEL_INVALID_FILE. */
export async function readGgufHeader(file: string): Promise<GgufHeader> {
  const handle = await fs.open(file, "r").catch((e: unknown) => {
    throw invalid(`cannot open file (${(e as Error).message})`);
  });
  try {
    const fileSize = (await handle.stat()).size;
    for (let want = Math.min(FIRST_READ, fileSize); ; want = Math.min(want * 4, fileSize)) {
      if (want > MAX_HEADER) throw invalid(`header larger than ${MAX_HEADER >> 20} MiB`);
      const buf = Buffer.alloc(want);
      const { bytesRead } = await handle.read(buf, 0, want, 0);
      try {
        return parseHeader(buf.subarray(0, bytesRead), fileSize);
      } catch (e) {
        if (!(e instanceof NeedMore) || bytesRead >= fileSize) throw e instanceof NeedMore ? invalid("truncated") : e;
      }
    }
  } finally {
    await handle.close();
  }
}
