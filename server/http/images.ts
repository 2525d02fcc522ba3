// Request images at the HTTP edge: Ollama's base64 strings (`images`, `messages[].images`) and OpenAI's image_url
// parts (data URLs, or http(s) URLs fetched with a size and a time limit when the server allows remote images).
// Every problem is a BAD_REQUEST naming the field; the bytes' content (truncated, corrupt) is checked when the engine
// decodes them.
import { AppError } from "../common/errors.ts";
import { formatBytes, imageProblem } from "../common/image-format.ts";

export interface ImageInputConfig {
  /** Largest image accepted (encoded bytes). */
  maxBytes: number;
  /** Whether image_url may be an http(s) URL the server fetches. */
  allowRemote: boolean;
  /** Longest a remote image fetch may take (ms). */
  remoteTimeoutMs: number;
}

export const DEFAULT_IMAGE_INPUT: ImageInputConfig = {
  maxBytes: 20 * 1024 * 1024,
  allowRemote: true,
  remoteTimeoutMs: 10_000,
};

const bad = (param: string, message: string): AppError =>
  new AppError("BAD_REQUEST", `invalid ${param}: ${message}`, { param });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Base64 text (whitespace ignored) to bytes; undefined when it is not base64. */
function fromBase64(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, "");
  if (!BASE64.test(compact) || compact.length % 4 === 1) return undefined;
  return Buffer.from(compact, "base64");
}

// Base64 takes 4 characters for 3 bytes: an oversized image is refused before it is decoded.
const tooLargeBase64 = (data: string, config: ImageInputConfig): boolean => (data.length * 3) / 4 > config.maxBytes + 4;
const overLimit = (data: string, config: ImageInputConfig): string =>
  `the image is about ${formatBytes(Math.floor((data.length * 3) / 4))}, over the limit of ${formatBytes(config.maxBytes)} (GANTRY_MAX_IMAGE_SIZE)`;

/** Checks an image's bytes (size limit, format) and returns them. */
function checked(bytes: Uint8Array, param: string, config: ImageInputConfig): Uint8Array {
  const problem = imageProblem(bytes, config.maxBytes);
  if (problem) throw bad(param, problem);
  return bytes;
}

/** Ollama's `images`: base64 strings (a data URL prefix is tolerated). */
export function base64Images(
  images: string[] | undefined,
  field: string,
  config: ImageInputConfig,
): Uint8Array[] | undefined {
  if (!images?.length) return undefined;
  return images.map((text, i) => {
    const param = `${field}.${i}`;
    const data = text.startsWith("data:") ? parseDataUrl(text, param).data : text;
    if (tooLargeBase64(data, config)) throw bad(param, overLimit(data, config));
    const bytes = fromBase64(data);
    if (!bytes) throw bad(param, "not base64 image data");
    return checked(new Uint8Array(bytes), param, config);
  });
}

/** A data URL's parts: `data:<mime>[;params];base64,<data>`. */
function parseDataUrl(url: string, param: string): { mime: string; data: string } {
  const comma = url.indexOf(",");
  const m = comma < 0 ? null : /^data:([^;,]*)((?:;[^;,]*)*)$/i.exec(url.slice(0, comma));
  if (!m) throw bad(param, "malformed data URL (expected data:image/<type>;base64,<data>)");
  if (!m[2]!.split(";").some((p) => p.toLowerCase() === "base64"))
    throw bad(param, "the data URL is not base64-encoded (expected data:image/<type>;base64,<data>)");
  const mime = m[1]!.toLowerCase();
  if (mime !== "" && !mime.startsWith("image/"))
    throw bad(param, `the data URL holds ${mime}, not an image (expected data:image/<type>;base64,<data>)`);
  return { mime, data: url.slice(comma + 1) };
}

/** An OpenAI image_url: a data URL, or an http(s) URL fetched when allowed. */
export async function imageFromUrl(url: string, param: string, config: ImageInputConfig): Promise<Uint8Array> {
  if (/^data:/i.test(url)) {
    const { data } = parseDataUrl(url, param);
    if (tooLargeBase64(data, config)) throw bad(param, overLimit(data, config));
    const bytes = fromBase64(decodeURIComponentSafe(data));
    if (!bytes) throw bad(param, "malformed data URL: its data is not base64");
    return checked(new Uint8Array(bytes), param, config);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad(param, "not a URL (expected a data:image/...;base64 URL or an http(s) URL)");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw bad(param, `${parsed.protocol} URLs are not supported (expected a data:image/...;base64 URL or http(s))`);
  if (!config.allowRemote)
    throw bad(
      param,
      "this server does not fetch remote images (GANTRY_ALLOW_REMOTE_IMAGES=false); send the image as a data URL",
    );
  return checked(await fetchImage(parsed, param, config), param, config);
}

const decodeURIComponentSafe = (s: string): string => {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** GETs a remote image, refusing it past maxBytes (by Content-Length or while reading) or remoteTimeoutMs. */
async function fetchImage(url: URL, param: string, config: ImageInputConfig): Promise<Uint8Array> {
  const where = `the image at ${url.origin}${url.pathname}`;
  const signal = AbortSignal.timeout(config.remoteTimeoutMs);
  const timedOut = () => bad(param, `${where} did not arrive within ${config.remoteTimeoutMs / 1000} s`);
  let res: Response;
  try {
    res = await fetch(url, { signal, redirect: "follow", headers: { accept: "image/*" } });
  } catch (e) {
    if (signal.aborted) throw timedOut();
    throw bad(
      param,
      `cannot fetch ${where}: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`,
    );
  }
  const tooLarge = () =>
    bad(param, `${where} is over the limit of ${formatBytes(config.maxBytes)} (GANTRY_MAX_IMAGE_SIZE)`);
  try {
    if (!res.ok) throw bad(param, `fetching ${where} failed: HTTP ${res.status}`);
    const length = Number(res.headers.get("content-length") ?? NaN);
    if (length > config.maxBytes) throw tooLarge();
    const chunks: Uint8Array[] = [];
    let total = 0;
    for await (const chunk of res.body ?? []) {
      total += chunk.length;
      if (total > config.maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
    return new Uint8Array(Buffer.concat(chunks));
  } catch (e) {
    if (e instanceof AppError) throw e;
    if (signal.aborted) throw timedOut();
    throw bad(param, `cannot fetch ${where}: ${(e as Error).message}`);
  } finally {
    if (!res.bodyUsed) await res.body?.cancel().catch(() => undefined);
  }
}
