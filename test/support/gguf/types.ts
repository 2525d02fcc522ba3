// GGUF v3 vocabulary shared by the writer and the reader: value types, tensor types and their block layouts.

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const DEFAULT_ALIGNMENT = 32;

export const GGUF_TYPE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GGUF_TYPE)[keyof typeof GGUF_TYPE];

export const GGML_TYPE = { F32: 0, F16: 1, Q8_0: 8 } as const;
export type GgmlType = (typeof GGML_TYPE)[keyof typeof GGML_TYPE];

/** llama.cpp's token attributes (tokenizer.ggml.token_type). */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;
export type TokenType = (typeof TOKEN_TYPE)[keyof typeof TOKEN_TYPE];

/** Elements per block and bytes per block of each tensor type. */
export const TYPE_LAYOUT: Record<GgmlType, { blockSize: number; blockBytes: number }> = {
  [GGML_TYPE.F32]: { blockSize: 1, blockBytes: 4 },
  [GGML_TYPE.F16]: { blockSize: 1, blockBytes: 2 },
  [GGML_TYPE.Q8_0]: { blockSize: 32, blockBytes: 34 },
};

type NumericType = Exclude<GgufValueType, typeof GGUF_TYPE.BOOL | typeof GGUF_TYPE.STRING | typeof GGUF_TYPE.ARRAY>;
type WideType = typeof GGUF_TYPE.UINT64 | typeof GGUF_TYPE.INT64;
export type GgufScalarType = Exclude<GgufValueType, typeof GGUF_TYPE.ARRAY>;
export type GgufScalarValue = number | bigint | boolean | string;

/** A typed metadata value. 64-bit integers may be given as number or bigint; the reader returns bigint. */
export type GgufValue =
  | { type: Exclude<NumericType, WideType>; value: number }
  | { type: WideType; value: number | bigint }
  | { type: typeof GGUF_TYPE.BOOL; value: boolean }
  | { type: typeof GGUF_TYPE.STRING; value: string }
  | { type: typeof GGUF_TYPE.ARRAY; elemType: GgufScalarType; value: readonly GgufScalarValue[] };

export type GgufMetadata = Record<string, GgufValue>;

/** Constructors for typed metadata values. */
export const kv = {
  u8: (value: number): GgufValue => ({ type: GGUF_TYPE.UINT8, value }),
  i8: (value: number): GgufValue => ({ type: GGUF_TYPE.INT8, value }),
  u16: (value: number): GgufValue => ({ type: GGUF_TYPE.UINT16, value }),
  i16: (value: number): GgufValue => ({ type: GGUF_TYPE.INT16, value }),
  u32: (value: number): GgufValue => ({ type: GGUF_TYPE.UINT32, value }),
  i32: (value: number): GgufValue => ({ type: GGUF_TYPE.INT32, value }),
  f32: (value: number): GgufValue => ({ type: GGUF_TYPE.FLOAT32, value }),
  bool: (value: boolean): GgufValue => ({ type: GGUF_TYPE.BOOL, value }),
  str: (value: string): GgufValue => ({ type: GGUF_TYPE.STRING, value }),
  u64: (value: number | bigint): GgufValue => ({ type: GGUF_TYPE.UINT64, value }),
  i64: (value: number | bigint): GgufValue => ({ type: GGUF_TYPE.INT64, value }),
  f64: (value: number): GgufValue => ({ type: GGUF_TYPE.FLOAT64, value }),
  arr: (elemType: GgufScalarType, value: readonly GgufScalarValue[]): GgufValue => ({
    type: GGUF_TYPE.ARRAY,
    elemType,
    value,
  }),
};

/** Where and how a tensor is stored; dims in GGUF order (ne0 first = the row length). */
export interface TensorInfo {
  name: string;
  dims: number[];
  type: GgmlType;
  /** Byte offset relative to the start of the data section. */
  offset: number;
}

export const alignUp = (n: number, alignment: number): number => Math.ceil(n / alignment) * alignment;

export function tensorByteSize(type: GgmlType, dims: readonly number[]): number {
  const { blockSize, blockBytes } = TYPE_LAYOUT[type];
  const ne0 = dims[0] ?? 1;
  if (ne0 % blockSize !== 0) throw new Error(`row length ${ne0} is not a multiple of the block size ${blockSize}`);
  return (dims.reduce((a, b) => a * b, 1) / blockSize) * blockBytes;
}

export const rowByteSize = (type: GgmlType, rowLength: number): number => tensorByteSize(type, [rowLength]);
