// Encoded image bytes -> RGB pixels for the projector. JPEG, PNG, GIF (first frame) and BMP decode in the patched addon
// (stb_image on a libuv worker, native/mtmd.ts); WebP, which stb_image lacks, decodes with libwebp compiled to
// WebAssembly (@jsquash/webp), on the JS thread (a 1-megapixel WebP takes a few milliseconds). A file that is not an
// image, is truncated or corrupt, or is too large is a BAD_REQUEST naming the request field it came from.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import type { Llama } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import { imageProblem, sniffImageFormat } from "../common/image-format.ts";
import { decodeImage as decodeNative, imageFromPixels, type ImageInput } from "./native/mtmd.ts";

/** Default limit on an encoded request image: 20 MiB (as OpenAI's). */
export const DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024;

export interface ImageLimits {
  /** Largest encoded image (bytes). */
  maxBytes: number;
  /** Largest decoded image (pixels). */
  maxPixels: number;
}

let webpDecoder: Promise<(data: ArrayBuffer) => Promise<{ width: number; height: number; data: Uint8ClampedArray }>>;

function loadWebpDecoder(): typeof webpDecoder {
  webpDecoder ??= (async () => {
    // The emscripten module builds an ImageData, a browser class.
    (globalThis as { ImageData?: unknown }).ImageData ??= class {
      data: Uint8ClampedArray;
      width: number;
      height: number;
      constructor(data: Uint8ClampedArray, width: number, height: number) {
        this.data = data;
        this.width = width;
        this.height = height;
      }
    };
    const wasm = globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<unknown> } };
    const mod = (await import("@jsquash/webp/decode.js")) as unknown as {
      init(module: unknown): Promise<void>;
      default(data: ArrayBuffer): Promise<{ width: number; height: number; data: Uint8ClampedArray }>;
    };
    const wasmPath = createRequire(import.meta.url).resolve("@jsquash/webp/codec/dec/webp_dec.wasm");
    await mod.init(await wasm.WebAssembly.compile(fs.readFileSync(wasmPath)));
    return mod.default;
  })();
  return webpDecoder;
}

async function decodeWebp(bytes: Uint8Array, maxPixels: number): Promise<ImageInput> {
  const decode = await loadWebpDecoder();
  let img: { width: number; height: number; data: Uint8ClampedArray };
  try {
    img = await decode(bytes.slice().buffer);
  } catch {
    throw new Error("corrupt or truncated WebP data (or an animated WebP, which is not supported)");
  }
  if (img.width * img.height > maxPixels)
    throw new Error(`the image is ${img.width}x${img.height}, more than ${maxPixels} pixels`);
  const rgb = new Uint8Array(img.width * img.height * 3);
  for (let p = 0, q = 0; p < img.data.length; p += 4, q += 3) {
    rgb[q] = img.data[p]!;
    rgb[q + 1] = img.data[p + 1]!;
    rgb[q + 2] = img.data[p + 2]!;
  }
  // Named by the SHA-256 of the encoded bytes, as the native decoder names images.
  return imageFromPixels(img.width, img.height, rgb, createHash("sha256").update(bytes).digest("hex"));
}

/** Decodes one request image; `param` names its field in errors (e.g. "messages.1.images.0"). */
export async function decodeRequestImage(
  llama: Llama,
  bytes: Uint8Array,
  param: string,
  limits: ImageLimits,
): Promise<ImageInput> {
  const problem = imageProblem(bytes, limits.maxBytes);
  if (problem) throw new AppError("BAD_REQUEST", `invalid image in ${param}: ${problem}`, { param });
  try {
    if (sniffImageFormat(bytes) === "WebP") return await decodeWebp(bytes, limits.maxPixels);
    return await decodeNative(llama, bytes, { maxPixels: limits.maxPixels });
  } catch (e) {
    throw new AppError("BAD_REQUEST", `invalid image in ${param}: ${(e as Error).message}`, { param });
  }
}
