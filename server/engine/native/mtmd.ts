// Image input on the engine's own native context: the patched addon's bindings of llama.cpp's multimodal library (mtmd,
// see node-llama-cpp-addon.patch, item 6), typed, with every touch of node-llama-cpp internals in this file.
// The pipeline for one prompt with images:
//   decodeImage(bytes)            JPEG/PNG/GIF/BMP -> RGB pixels, on a libuv worker, named by the SHA-256 of the bytes
//   projector.tokenize(text, images)  the text split at its media markers into text chunks (tokens) and image chunks
//   projector.encode(prompt, i)   the projector runs on image chunk i, on a worker: its embeddings (EncodedMedia)
//   projector.decodeMedia(context, media, sequence, position)  those embeddings decoded into a sequence's KV cells
// Text chunks are ordinary prompt tokens (decoded like any others); evalChunks does the whole prompt in order.
// Positions: an image takes `nPos` positions and `nTokens` KV cells (equal except for M-RoPE models).
// In the scheduler: text chunks go through the step batcher like any prompt; an image chunk is encoded (a worker; on
// CPU best inside a decode turn, so it does not share the cores with decode steps), then decoded into the slot as a
// step of its own (embeddings cannot share a llama_batch with tokens), and the slot records its positions under the
// image's id, so a later prompt reuses the KV prefix up to and including whole images with the same id; an
// EncodedMedia kept by id (an LRU by `bytes`) saves the encode when only the KV cells were lost.
import { createHash } from "node:crypto";
import type { Llama, LlamaContext, LlamaModel, Token } from "node-llama-cpp";
import { addonContextOf } from "./node-llama-cpp.ts";

/** The formats decodeImage takes (stb_image in the addon). */
export type ImageFormat = "JPEG" | "PNG" | "GIF" | "BMP";

/** Decoded pixels, ready for tokenize. */
export interface ImageInput {
  width: number;
  height: number;
  /** width * height * 3 bytes, RGB, rows top to bottom. */
  pixels: Uint8Array;
  /** Names the image in its chunk: the same id means the same image (KV cache and encoding reuse). */
  id: string;
  format?: ImageFormat;
}

export type PromptChunk =
  | { type: "text"; tokens: Token[]; nTokens: number; nPos: number }
  | { type: "image" | "audio"; nTokens: number; nPos: number; id: string };

export interface ProjectorInfo {
  /** What tokenize splits the text at: one image per marker, in order. */
  marker: string;
  /** Image embeddings take fewer positions than KV cells (M-RoPE). */
  mrope: boolean;
  /** An image's embeddings attend to each other both ways: the whole image must fit one micro-batch. */
  nonCausalImages: boolean;
}

export interface ProjectorOptions {
  /** Threads the image encoder computes with. */
  threads: number;
  /** Run the encoder once at load (sizes its compute buffers; llama.cpp's default). Default true. */
  warmup?: boolean;
}

/** Default limit on decoded image size: 50 megapixels (150 MB of RGB). */
export const DEFAULT_MAX_IMAGE_PIXELS = 50_000_000;

// ---- the addon's classes (patched build only) ----

interface NativeMtmdContext {
  init(): Promise<void>;
  dispose(): void;
  getInfo(): ProjectorInfo & { vision: boolean; audio: boolean };
  tokenize(
    output: NativeChunks,
    text: string,
    images: readonly ImageInput[],
    addSpecial: boolean,
    parseSpecial: boolean,
  ): Promise<void>;
  encode(output: NativeMedia, chunks: NativeChunks, index: number): Promise<void>;
  decodeMedia(
    context: unknown,
    media: NativeMedia,
    sequenceId: number,
    position: number,
    batchSize: number,
  ): Promise<number>;
}

interface NativeChunkInfo {
  type: "text" | "image" | "audio";
  nTokens: number;
  nPos: number;
  tokens?: Uint32Array;
  id?: string;
}

interface NativeChunks {
  getChunks(): NativeChunkInfo[];
  dispose(): void;
}

interface NativeMedia {
  getInfo(): { type: string; nTokens: number; nPos: number; id?: string; bytes: number } | undefined;
  dispose(): void;
}

interface MtmdBindings {
  AddonMtmdContext: {
    new (model: unknown, projectorPath: string, options: Record<string, unknown>): NativeMtmdContext;
    decodeImage(
      data: Uint8Array,
      maxPixels: number,
    ): Promise<{ width: number; height: number; format: ImageFormat; pixels: Uint8Array }>;
  };
  AddonMtmdChunks: new () => NativeChunks;
  AddonMtmdMedia: new () => NativeMedia;
}

// node-llama-cpp keeps the addon's exports in Llama._bindings and the native model in LlamaModel._model (the native
// context: addonContextOf, the port's one accessor).
const bindingsOf = (llama: Llama): Partial<MtmdBindings> =>
  (llama as unknown as { _bindings: Partial<MtmdBindings> })._bindings;
const nativeModelOf = (model: LlamaModel): unknown => (model as unknown as { _model: unknown })._model;
const llamaOf = (model: LlamaModel): Llama => (model as unknown as { _llama: Llama })._llama;

function mtmdBindings(llama: Llama): MtmdBindings {
  const b = bindingsOf(llama);
  if (!b.AddonMtmdContext || !b.AddonMtmdChunks || !b.AddonMtmdMedia)
    throw new Error("image input needs the patched engine build with mtmd (this binary has none)");
  return b as MtmdBindings;
}

/** Whether the loaded binary has image input (the patched build with mtmd). */
export function mtmdAvailable(llama: Llama): boolean {
  const b = bindingsOf(llama);
  return !!(b.AddonMtmdContext && b.AddonMtmdChunks && b.AddonMtmdMedia);
}

/**
 * Decodes an encoded image (JPEG, PNG, GIF: its first frame, BMP) into RGB pixels on a libuv worker. Rejects with a
 * message that says what is wrong (not an image, an unsupported format such as WebP, a corrupt or truncated file, more
 * than `maxPixels` pixels) and never crashes the process. The id is the SHA-256 of the bytes.
 */
export async function decodeImage(
  llama: Llama,
  data: Uint8Array,
  opts: { maxPixels?: number } = {},
): Promise<ImageInput> {
  const decoded = await mtmdBindings(llama).AddonMtmdContext.decodeImage(
    data,
    opts.maxPixels ?? DEFAULT_MAX_IMAGE_PIXELS,
  );
  return { ...decoded, id: createHash("sha256").update(data).digest("hex") };
}

/** An image from RGB pixels decoded elsewhere (a format the addon does not decode); the id defaults to their hash. */
export function imageFromPixels(width: number, height: number, pixels: Uint8Array, id?: string): ImageInput {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0)
    throw new RangeError(`bad image size ${width}x${height}`);
  if (pixels.length !== width * height * 3)
    throw new RangeError(
      `an image of ${width}x${height} needs ${width * height * 3} bytes of RGB, not ${pixels.length}`,
    );
  return { width, height, pixels, id: id ?? createHash("sha256").update(pixels).digest("hex") };
}

/**
 * Tracks a native object's calls in flight so that disposing it waits for them (the addon frees memory a worker may be
 * using only under a lock, and taking that lock on the JS thread would block it for a whole encode).
 */
class InFlight {
  private pending = new Set<Promise<unknown>>();
  private disposed = false;

  run<T>(what: string, call: () => Promise<T>): Promise<T> {
    if (this.disposed) return Promise.reject(new Error(`${what}: already disposed`));
    const p = call();
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Marks as disposed and resolves once nothing is in flight. */
  async close(): Promise<void> {
    this.disposed = true;
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}

/** A prompt split into chunks (tokenize's output); holds the preprocessed images until disposed. */
export class TokenizedPrompt {
  readonly chunks: readonly PromptChunk[];
  /** @internal */
  readonly native: NativeChunks;
  /** @internal */
  readonly calls = new InFlight();

  /** @internal */
  constructor(native: NativeChunks) {
    this.native = native;
    this.chunks = native
      .getChunks()
      .map((c) =>
        c.type === "text"
          ? { type: "text", tokens: Array.from(c.tokens ?? [], (t) => t as Token), nTokens: c.nTokens, nPos: c.nPos }
          : { type: c.type, nTokens: c.nTokens, nPos: c.nPos, id: c.id ?? "" },
      );
  }

  /** KV cells the whole prompt fills. */
  get nTokens(): number {
    return this.chunks.reduce((n, c) => n + c.nTokens, 0);
  }

  /** Positions the whole prompt advances. */
  get nPos(): number {
    return this.chunks.reduce((n, c) => n + c.nPos, 0);
  }

  async dispose(): Promise<void> {
    await this.calls.close();
    this.native.dispose();
  }
}

/** An encoded image: its embeddings, decodable into any sequence of the model's contexts, as often as needed. */
export class EncodedMedia {
  readonly id: string;
  readonly nTokens: number;
  readonly nPos: number;
  /** Memory the embeddings take. */
  readonly bytes: number;
  /** @internal */
  readonly native: NativeMedia;
  /** @internal */
  readonly calls = new InFlight();

  /** @internal */
  constructor(native: NativeMedia) {
    const info = native.getInfo();
    if (!info) throw new Error("the media was not encoded");
    this.native = native;
    this.id = info.id ?? "";
    this.nTokens = info.nTokens;
    this.nPos = info.nPos;
    this.bytes = info.bytes;
  }

  async dispose(): Promise<void> {
    await this.calls.close();
    this.native.dispose();
  }
}

/** What evalChunks did: the position after the prompt and the logit row of its last token (for sampling). */
export interface EvalResult {
  position: number;
  logitIndex: number;
  /** Image encodes it ran (images found in `encoded` are not encoded again). */
  encodes: number;
}

/** A projector (mmproj GGUF) loaded for a model: tokenizes prompts with images, encodes and decodes images. */
export class Projector {
  readonly info: ProjectorInfo;
  readonly path: string;
  private readonly native: NativeMtmdContext;
  private readonly bindings: MtmdBindings;
  private readonly calls = new InFlight();

  private constructor(native: NativeMtmdContext, bindings: MtmdBindings, path: string) {
    this.native = native;
    this.bindings = bindings;
    this.path = path;
    const { marker, mrope, nonCausalImages } = native.getInfo();
    this.info = { marker, mrope, nonCausalImages };
  }

  /**
   * Loads the projector at `path` for `model` on a worker. Rejects with llama.cpp's reason (not a projector, made for
   * a model of another width, no vision encoder). Dispose it before the model.
   */
  static async load(model: LlamaModel, path: string, opts: ProjectorOptions): Promise<Projector> {
    const bindings = mtmdBindings(llamaOf(model));
    const native = new bindings.AddonMtmdContext(nativeModelOf(model), path, {
      threads: Math.max(1, Math.round(opts.threads)),
      warmup: opts.warmup ?? true,
    });
    try {
      await native.init();
    } catch (e) {
      native.dispose();
      throw e;
    }
    return new Projector(native, bindings, path);
  }

  /**
   * Splits `text` at its markers (info.marker) into text chunks (tokens) and image chunks, the images in order, and
   * preprocesses the images (on a worker). addSpecial adds the model's BOS; parseSpecial reads control tokens in text.
   */
  tokenize(
    text: string,
    images: readonly ImageInput[],
    opts: { addSpecial?: boolean; parseSpecial?: boolean } = {},
  ): Promise<TokenizedPrompt> {
    const markers = text.split(this.info.marker).length - 1;
    if (markers !== images.length)
      return Promise.reject(
        new Error(
          `the prompt has ${markers} image marker${markers === 1 ? "" : "s"} for ${images.length} image${images.length === 1 ? "" : "s"}`,
        ),
      );
    return this.calls.run("tokenize", async () => {
      const chunks = new this.bindings.AddonMtmdChunks();
      await this.native.tokenize(chunks, text, images, opts.addSpecial ?? true, opts.parseSpecial ?? true);
      return new TokenizedPrompt(chunks);
    });
  }

  /** Runs the encoder on the prompt's image chunk `index` (on a worker; one encode at a time per projector). */
  encode(prompt: TokenizedPrompt, index: number): Promise<EncodedMedia> {
    const chunk = prompt.chunks[index];
    if (!chunk || chunk.type === "text") return Promise.reject(new Error(`chunk ${index} is not an image`));
    return this.calls.run("encode", () =>
      prompt.calls.run("encode", async () => {
        const media = new this.bindings.AddonMtmdMedia();
        await this.native.encode(media, prompt.native, index);
        return new EncodedMedia(media);
      }),
    );
  }

  /**
   * Decodes the media's embeddings into the context's sequence from `position` on, in batches of at most `batchSize`
   * (capped at the context's batch size), on a worker; resolves with the position after it. Like any decode on the
   * context, it must not overlap another one (the step batcher runs it between steps).
   */
  decodeMedia(
    context: LlamaContext,
    media: EncodedMedia,
    sequenceId: number,
    position: number,
    batchSize: number = context.batchSize,
  ): Promise<number> {
    return this.calls.run("decodeMedia", () =>
      media.calls.run("decodeMedia", () =>
        this.native.decodeMedia(addonContextOf(context), media.native, sequenceId, position, batchSize),
      ),
    );
  }

  /**
   * Evaluates the whole prompt into the context's sequence from `position` on, chunk by chunk (text in batches of at
   * most `batchSize` tokens, images encoded, unless found in `encoded` by id, and decoded), with the logits of its last
   * token; mtmd_helper_eval_chunks on the addon's own batches. The prompt must end with text. For one caller at a
   * time on the context (a scheduler interleaves the same calls with its own steps instead).
   */
  async evalChunks(
    context: LlamaContext,
    prompt: TokenizedPrompt,
    o: { sequenceId: number; position: number; batchSize?: number; encoded?: Map<string, EncodedMedia> },
  ): Promise<EvalResult> {
    const last = prompt.chunks.at(-1);
    if (!last || last.type !== "text") throw new Error("the prompt must end with text");
    const native = addonContextOf(context);
    const batchSize = Math.max(1, Math.min(o.batchSize ?? context.batchSize, context.batchSize));
    let position = o.position,
      logitIndex = -1,
      encodes = 0;
    for (const [i, chunk] of prompt.chunks.entries()) {
      if (chunk.type === "text") {
        for (let start = 0; start < chunk.tokens.length; start += batchSize) {
          const part = chunk.tokens.slice(start, start + batchSize);
          const lastOfPrompt = i === prompt.chunks.length - 1 && start + part.length === chunk.tokens.length;
          native.initBatch(part.length);
          const logits = native.addToBatch(
            o.sequenceId,
            position,
            Uint32Array.from(part),
            lastOfPrompt ? Uint32Array.of(part.length - 1) : new Uint32Array(0),
          );
          await native.decodeBatch();
          if (lastOfPrompt) logitIndex = logits[0]!;
          position += part.length;
        }
        continue;
      }
      let media = o.encoded?.get(chunk.id);
      if (!media) {
        media = await this.encode(prompt, i);
        encodes++;
        if (o.encoded) o.encoded.set(chunk.id, media);
      }
      try {
        position = await this.decodeMedia(context, media, o.sequenceId, position, batchSize);
      } finally {
        if (!o.encoded) await media.dispose();
      }
    }
    return { position, logitIndex, encodes };
  }

  /**
   * Frees the projector once its calls in flight are done. Dispose it before its model, and the prompts and media it
   * made when done with them (media cannot be decoded without their projector).
   */
  async dispose(): Promise<void> {
    await this.calls.close();
    this.native.dispose();
  }
}

/** Loads a projector for the model (see Projector.load). */
export const loadProjector = (model: LlamaModel, path: string, opts: ProjectorOptions): Promise<Projector> =>
  Projector.load(model, path, opts);
