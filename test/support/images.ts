// Test images made in code: RGB patterns and encoders for the formats image inputs take (PNG, baseline JPEG, BMP,
// GIF), dependency-free. The encoders are plain and valid rather than small: PNG rows unfiltered, JPEG with 4:4:4
// sampling and fixed-length Huffman codes, GIF with fixed 9-bit LZW codes.
import zlib from "node:zlib";

export interface RgbImage {
  width: number;
  height: number;
  /** width * height * 3 bytes, RGB, rows top to bottom. */
  rgb: Uint8Array;
}

/** A picture determined by `seed`: a colored gradient with a few seeded discs (different seeds look different). */
export function patternImage(width: number, height: number, seed: number): RgbImage {
  const rgb = new Uint8Array(width * height * 3);
  let s = seed * 2654435761 + 1;
  const rand = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const base = [rand() * 255, rand() * 255, rand() * 255];
  const discs = Array.from({ length: 3 }, () => ({
    x: rand() * width,
    y: rand() * height,
    r: (0.15 + rand() * 0.25) * Math.min(width, height),
    c: [rand() * 255, rand() * 255, rand() * 255],
  }));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let c = [base[0]! * (x / width), base[1]! * (y / height), base[2]!];
      for (const d of discs) if ((x - d.x) ** 2 + (y - d.y) ** 2 < d.r ** 2) c = d.c;
      rgb.set(
        c.map((v) => Math.round(v)),
        (y * width + x) * 3,
      );
    }
  }
  return { width, height, rgb };
}

/** One color everywhere. */
export function solidImage(width: number, height: number, color: [number, number, number]): RgbImage {
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) rgb.set(color, i * 3);
  return { width, height, rgb };
}

// ---- PNG: 8-bit RGB, filter type 0 on every row, one zlib stream ----

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

export function encodePng(img: RgbImage): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(img.width, 0);
  ihdr.writeUInt32BE(img.height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // bit depth 8, color type 2 (RGB), deflate, filter method 0, no interlace
  const stride = img.width * 3;
  const raw = Buffer.alloc((stride + 1) * img.height);
  for (let y = 0; y < img.height; y++) raw.set(img.rgb.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", zlib.deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

// ---- BMP: 24-bit BI_RGB, rows bottom to top, each padded to 4 bytes ----

export function encodeBmp(img: RgbImage): Buffer {
  const stride = Math.ceil((img.width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + stride * img.height);
  out.write("BM", 0, "latin1");
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(img.width, 18);
  out.writeInt32LE(img.height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(stride * img.height, 34);
  for (let y = 0; y < img.height; y++) {
    const row = 54 + (img.height - 1 - y) * stride;
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 3;
      out[row + x * 3] = img.rgb[i + 2]!;
      out[row + x * 3 + 1] = img.rgb[i + 1]!;
      out[row + x * 3 + 2] = img.rgb[i]!;
    }
  }
  return out;
}

// ---- GIF89a: 3-3-2 palette, one image per frame, LZW with a clear code before the code size would grow ----

/** The frames (all the same size) as a GIF; decoders that take one frame take the first. */
export function encodeGif(frames: readonly RgbImage[]): Buffer {
  const { width, height } = frames[0]!;
  const palette = Buffer.alloc(256 * 3);
  for (let i = 0; i < 256; i++) {
    palette[i * 3] = Math.round(((i >> 5) & 7) * (255 / 7));
    palette[i * 3 + 1] = Math.round(((i >> 2) & 7) * (255 / 7));
    palette[i * 3 + 2] = Math.round((i & 3) * (255 / 3));
  }
  const head = Buffer.alloc(13);
  head.write("GIF89a", 0, "latin1");
  head.writeUInt16LE(width, 6);
  head.writeUInt16LE(height, 8);
  head[10] = 0xf7; // global color table of 256 entries
  const parts: Buffer[] = [head, palette];
  for (const frame of frames) {
    const indexes = new Uint8Array(width * height);
    for (let i = 0; i < indexes.length; i++) {
      const [r, g, b] = [frame.rgb[i * 3]!, frame.rgb[i * 3 + 1]!, frame.rgb[i * 3 + 2]!];
      indexes[i] = ((r >> 5) << 5) | ((g >> 5) << 2) | (b >> 6);
    }
    const desc = Buffer.alloc(10);
    desc[0] = 0x2c;
    desc.writeUInt16LE(width, 5);
    desc.writeUInt16LE(height, 7);
    parts.push(desc, Buffer.from([8]), gifSubBlocks(lzw9(indexes)), Buffer.from([0]));
  }
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}

/**
 * LZW at minimum code size 8 that never lets the code size grow past 9 bits: every pixel is emitted as its own
 * literal code, with a clear code before the table would need 10 bits (valid LZW, no compression).
 */
function lzw9(indexes: Uint8Array): Buffer {
  const CLEAR = 256,
    END = 257;
  const out: number[] = [];
  let acc = 0,
    bits = 0;
  const emit = (code: number) => {
    acc |= code << bits;
    bits += 9;
    while (bits >= 8) {
      out.push(acc & 0xff);
      acc >>>= 8;
      bits -= 8;
    }
  };
  emit(CLEAR);
  // After a clear the decoder adds one table entry per code after the first; at 512 entries it would switch to 10 bits.
  let sinceClear = 0;
  for (const index of indexes) {
    if (sinceClear === 254) {
      emit(CLEAR);
      sinceClear = 0;
    }
    emit(index);
    sinceClear++;
  }
  emit(END);
  if (bits > 0) out.push(acc & 0xff);
  return Buffer.from(out);
}

function gifSubBlocks(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < data.length; i += 255) {
    const part = data.subarray(i, i + 255);
    parts.push(Buffer.from([part.length]), part);
  }
  return Buffer.concat(parts);
}

// ---- JPEG: baseline, YCbCr 4:4:4, Annex K quantization tables, fixed-length Huffman codes ----

const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
  35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47,
  55, 62, 63,
];
const LUMA_Q = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51,
  87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101,
  72, 92, 95, 98, 112, 100, 103, 99,
];
const CHROMA_Q = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
  99, 99, 99, 99, 99, 99,
];

/** A Huffman table giving every symbol a code of `length` bits, in symbol order (BITS and HUFFVAL, and the codes). */
function fixedHuffman(
  symbols: number[],
  length: number,
): { bits: number[]; values: number[]; code: Map<number, number> } {
  const bits = new Array<number>(16).fill(0);
  bits[length - 1] = symbols.length;
  return { bits, values: symbols, code: new Map(symbols.map((s, i) => [s, i])) };
}

// DC: magnitude categories 0-11 in 4-bit codes; AC: EOB, ZRL and every (run, size) pair in 8-bit codes (162 of the 255
// codes an 8-bit length allows; an all-ones code is never used).
const DC_TABLE = fixedHuffman(
  Array.from({ length: 12 }, (_, i) => i),
  4,
);
const AC_TABLE = fixedHuffman(
  [0x00, 0xf0, ...Array.from({ length: 160 }, (_, i) => ((i / 10) << 4) | ((i % 10) + 1))],
  8,
);

class BitWriter {
  readonly bytes: number[] = [];
  private acc = 0;
  private n = 0;
  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      if (++this.n === 8) {
        this.bytes.push(this.acc);
        if (this.acc === 0xff) this.bytes.push(0); // byte stuffing
        this.acc = 0;
        this.n = 0;
      }
    }
  }
  flush(): void {
    while (this.n !== 0) this.write(1, 1);
  }
}

const magnitudeBits = (v: number): number => (v === 0 ? 0 : 32 - Math.clz32(Math.abs(v)));

function segment(marker: number, body: number[]): number[] {
  const len = body.length + 2;
  return [0xff, marker, len >> 8, len & 0xff, ...body];
}

export function encodeJpeg(img: RgbImage, quality = 90): Buffer {
  const scale = quality < 50 ? 5000 / quality : 200 - quality * 2;
  const quant = [LUMA_Q, CHROMA_Q].map((t) =>
    t.map((q) => Math.min(255, Math.max(1, Math.floor((q * scale + 50) / 100)))),
  );
  const cos = Array.from({ length: 64 }, (_, i) => Math.cos(((2 * (i >> 3) + 1) * (i & 7) * Math.PI) / 16));
  const { width, height, rgb } = img;
  const bw = new BitWriter();
  const prevDc = [0, 0, 0];
  const block = new Float64Array(64);
  const coef = new Int32Array(64);
  for (let by = 0; by < height; by += 8) {
    for (let bx = 0; bx < width; bx += 8) {
      for (let comp = 0; comp < 3; comp++) {
        for (let y = 0; y < 8; y++) {
          for (let x = 0; x < 8; x++) {
            const i = (Math.min(by + y, height - 1) * width + Math.min(bx + x, width - 1)) * 3;
            const [r, g, b] = [rgb[i]!, rgb[i + 1]!, rgb[i + 2]!];
            const v =
              comp === 0
                ? 0.299 * r + 0.587 * g + 0.114 * b
                : comp === 1
                  ? -0.168736 * r - 0.331264 * g + 0.5 * b + 128
                  : 0.5 * r - 0.418688 * g - 0.081312 * b + 128;
            block[y * 8 + x] = v - 128;
          }
        }
        const q = quant[comp === 0 ? 0 : 1]!;
        for (let v = 0; v < 8; v++) {
          for (let u = 0; u < 8; u++) {
            let sum = 0;
            for (let y = 0; y < 8; y++)
              for (let x = 0; x < 8; x++) sum += block[y * 8 + x]! * cos[x * 8 + u]! * cos[y * 8 + v]!;
            const c = (u === 0 ? Math.SQRT1_2 : 1) * (v === 0 ? Math.SQRT1_2 : 1) * 0.25 * sum;
            coef[v * 8 + u] = Math.round(c / q[v * 8 + u]!);
          }
        }
        const dc = coef[0]! - prevDc[comp]!;
        prevDc[comp] = coef[0]!;
        const dcBits = magnitudeBits(dc);
        bw.write(DC_TABLE.code.get(dcBits)!, 4);
        if (dcBits > 0) bw.write(dc < 0 ? dc + (1 << dcBits) - 1 : dc, dcBits);
        let run = 0;
        for (let k = 1; k < 64; k++) {
          const ac = coef[ZIGZAG[k]!]!;
          if (ac === 0) {
            run++;
            continue;
          }
          for (; run > 15; run -= 16) bw.write(AC_TABLE.code.get(0xf0)!, 8);
          const acBits = magnitudeBits(ac);
          bw.write(AC_TABLE.code.get((run << 4) | acBits)!, 8);
          bw.write(ac < 0 ? ac + (1 << acBits) - 1 : ac, acBits);
          run = 0;
        }
        if (run > 0) bw.write(AC_TABLE.code.get(0x00)!, 8);
      }
    }
  }
  bw.flush();
  const dqt = quant.flatMap((t, id) => [id, ...ZIGZAG.map((z) => t[z]!)]);
  const dht = [
    [0x00, DC_TABLE],
    [0x10, AC_TABLE],
    [0x01, DC_TABLE],
    [0x11, AC_TABLE],
  ].flatMap(([cls, t]) => {
    const table = t as typeof DC_TABLE;
    return [cls as number, ...table.bits, ...table.values];
  });
  return Buffer.from([
    0xff,
    0xd8,
    ...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...segment(0xdb, dqt),
    ...segment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]),
    ...segment(0xc4, dht),
    ...segment(0xda, [3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]),
    ...bw.bytes,
    0xff,
    0xd9,
  ]);
}

/** A data URL of encoded image bytes, as an OpenAI image part carries it. */
export const dataUrl = (bytes: Buffer, mime = "image/png"): string => `data:${mime};base64,${bytes.toString("base64")}`;

/** An OpenAI chat user message: a text part, then one image part per URL. */
export function imageMessage(text: string, urls: string[]) {
  return {
    role: "user" as const,
    content: [
      { type: "text" as const, text },
      ...urls.map((url) => ({ type: "image_url" as const, image_url: { url } })),
    ],
  };
}
