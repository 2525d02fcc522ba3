// What kind of image a byte string is, from its first bytes (pure): the formats image inputs take, the image formats
// they do not (named, so the error can say so), or nothing recognisable.

/** The formats image inputs take (GIF: its first frame). */
export type ImageFormat = "JPEG" | "PNG" | "WebP" | "GIF" | "BMP";

export const SUPPORTED_IMAGE_FORMATS: readonly ImageFormat[] = ["JPEG", "PNG", "WebP", "GIF", "BMP"];

const ascii = (bytes: Uint8Array, at: number, text: string): boolean =>
  bytes.length >= at + text.length && [...text].every((c, i) => bytes[at + i] === c.charCodeAt(0));

const starts = (bytes: Uint8Array, ...prefix: number[]): boolean =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);

/** Image formats recognised but not taken, by their signatures. */
const UNSUPPORTED: ReadonlyArray<[string, (b: Uint8Array) => boolean]> = [
  ["TIFF", (b) => starts(b, 0x49, 0x49, 0x2a, 0x00) || starts(b, 0x4d, 0x4d, 0x00, 0x2a)],
  ["HEIC/HEIF", (b) => ascii(b, 4, "ftyp") && /^(heic|heix|hevc|heim|heis|mif1|msf1)$/.test(brand(b))],
  ["AVIF", (b) => ascii(b, 4, "ftyp") && /^avi[fs]$/.test(brand(b))],
  ["ICO", (b) => starts(b, 0x00, 0x00, 0x01, 0x00)],
  ["PSD", (b) => ascii(b, 0, "8BPS")],
  ["JPEG XL", (b) => starts(b, 0xff, 0x0a) || ascii(b, 4, "JXL ")],
  ["JPEG 2000", (b) => starts(b, 0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20)],
  ["SVG", (b) => /^\s*(<\?xml[^>]*>\s*)?<svg[\s>]/i.test(Buffer.from(b.subarray(0, 256)).toString("latin1"))],
  ["QOI", (b) => ascii(b, 0, "qoif")],
  [
    "PNM",
    (b) => b.length > 2 && b[0] === 0x50 && b[1]! >= 0x31 && b[1]! <= 0x36 && /\s/.test(String.fromCharCode(b[2]!)),
  ],
];

const brand = (b: Uint8Array): string => Buffer.from(b.subarray(8, 12)).toString("latin1");

/**
 * The format of an encoded image: a supported one, `{ unsupported: name }` for a recognised image format that is not
 * taken, or undefined for anything else (not an image).
 */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | { unsupported: string } | undefined {
  if (starts(bytes, 0xff, 0xd8, 0xff)) return "JPEG";
  if (starts(bytes, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "PNG";
  if (ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WEBP")) return "WebP";
  if (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a")) return "GIF";
  if (ascii(bytes, 0, "BM") && bytes.length >= 26) return "BMP";
  for (const [name, test] of UNSUPPORTED) if (test(bytes)) return { unsupported: name };
  return undefined;
}

/**
 * Why `bytes` cannot be an image input, or undefined when its format is one taken (its content is checked when it is
 * decoded): empty, over `maxBytes`, not an image, or an image format that is not supported.
 */
export function imageProblem(bytes: Uint8Array, maxBytes: number): string | undefined {
  if (bytes.length === 0) return "empty image data";
  if (bytes.length > maxBytes)
    return `the image is ${formatBytes(bytes.length)}, over the limit of ${formatBytes(maxBytes)} (GANTRY_MAX_IMAGE_SIZE)`;
  const format = sniffImageFormat(bytes);
  if (format === undefined)
    return `not an image (expected ${SUPPORTED_IMAGE_FORMATS.join(", ")} data; the first bytes are ${hexHead(bytes)})`;
  if (typeof format === "object")
    return `unsupported image format ${format.unsupported} (supported: ${SUPPORTED_IMAGE_FORMATS.join(", ")})`;
  return undefined;
}

export const formatBytes = (n: number): string =>
  n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;

const hexHead = (bytes: Uint8Array): string =>
  Buffer.from(bytes.subarray(0, 8)).toString("hex").replace(/(..)/g, "$1 ").trim();
