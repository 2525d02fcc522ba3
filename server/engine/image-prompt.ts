// A prompt with images, ready for a sequence: the text runs around the images (tokens) and each image decoded and
// preprocessed by the model's projector, as one list of parts. Its `tokens` are the positions the prompt takes in the
// sequence, an image's positions holding a stand-in token derived from the image's id (negative: never a vocabulary
// id). So the slot's cached prefix is compared with a new prompt as for text alone: the same image in the same place
// matches and is neither encoded nor decoded again (a follow-up turn about an image reuses the KV cache).
import type { Llama, LlamaContext, Token } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import type { Slot, SlotLoop } from "./slot-loop.ts";
import { clientClosed } from "./slot-pool.ts";
import { decodeRequestImage, type ImageLimits } from "./image-decode.ts";
import type { ImageEncodes } from "./image-encodes.ts";
import type { Projector, TokenizedPrompt } from "./native/mtmd.ts";
import type { BuiltPrompt } from "./prompt.ts";

export type PromptPart =
  | { kind: "text"; tokens: Token[] }
  /** An image: chunk `index` of `source` (its projector's tokenization), taking `nPos` positions. */
  | { kind: "image"; id: string; nPos: number; source: TokenizedPrompt; index: number; param: string };

export interface ImagePrompt {
  parts: PromptPart[];
  /** The positions the prompt takes: text tokens, and each image's nPos stand-in tokens (imageCell). */
  tokens: Token[];
  /** Frees the preprocessed images. */
  dispose(): Promise<void>;
}

/** The stand-in token for every position of an image (its id's first 48 bits, negated). */
export const imageCell = (id: string): Token => (-1 - Number.parseInt(id.slice(0, 12) || "0", 16)) as Token;

export const isImageCell = (t: Token): boolean => t < 0;

/**
 * Decodes the prompt's images and splits them into the projector's chunks (BAD_REQUEST for a bad image); stops when
 * `signal` aborts (the client went away).
 */
export async function imagePrompt(
  llama: Llama,
  projector: Projector,
  built: NonNullable<BuiltPrompt["withImages"]>,
  limits: ImageLimits,
  signal?: AbortSignal,
): Promise<ImagePrompt> {
  // A client gone before or while its images are decoded: no further work for it.
  if (signal?.aborted) throw clientClosed();
  const decoded = await Promise.all(built.images.map((img) => decodeRequestImage(llama, img.bytes, img.param, limits)));
  const sources: TokenizedPrompt[] = [];
  const dispose = () => Promise.all(sources.map((s) => s.dispose())).then(() => undefined);
  try {
    const parts: PromptPart[] = [];
    const addText = (tokens: Token[]) => {
      if (tokens.length === 0) return;
      const last = parts.at(-1);
      if (last?.kind === "text") last.tokens.push(...tokens);
      else parts.push({ kind: "text", tokens: [...tokens] });
    };
    for (const [i, segment] of built.segments.entries()) {
      addText(segment);
      const image = decoded[i];
      if (!image) continue;
      if (signal?.aborted) throw clientClosed();
      // The projector's own chunks for one marker: the image, with whatever text the model puts around images.
      const source = await projector.tokenize(projector.info.marker, [image], {
        addSpecial: false,
        parseSpecial: true,
      });
      sources.push(source);
      for (const [index, chunk] of source.chunks.entries()) {
        if (chunk.type === "text") addText(chunk.tokens);
        else
          parts.push({ kind: "image", id: chunk.id, nPos: chunk.nPos, source, index, param: built.images[i]!.param });
      }
    }
    if (parts.at(-1)?.kind !== "text")
      throw new AppError("BAD_REQUEST", "a prompt cannot end with an image: give text after it", { param: "prompt" });
    const tokens = parts.flatMap((p) =>
      p.kind === "text" ? p.tokens : new Array<Token>(p.nPos).fill(imageCell(p.id)),
    );
    return { parts, tokens, dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

/**
 * Where a kept prefix of `keep` positions must end instead so that it does not cut an image in two (an image's
 * embeddings are decoded whole): the start of the image it would cut.
 */
export function keepWholeImages(prompt: ImagePrompt, keep: number): number {
  let at = 0;
  for (const p of prompt.parts) {
    const n = p.kind === "text" ? p.tokens.length : p.nPos;
    if (keep < at + n) return p.kind === "image" && keep > at ? at : keep;
    at += n;
  }
  return keep;
}

/** The parts still to evaluate after the first `from` positions (which end at a part or inside text). */
export function partsFrom(prompt: ImagePrompt, from: number): PromptPart[] {
  const out: PromptPart[] = [];
  let at = 0;
  for (const p of prompt.parts) {
    const n = p.kind === "text" ? p.tokens.length : p.nPos;
    if (at + n > from) {
      if (p.kind === "text" && from > at) out.push({ kind: "text", tokens: p.tokens.slice(from - at) });
      else out.push(p);
    }
    at += n;
  }
  return out;
}

/** How a generation evaluates a prompt with images (generation.ts): what it keeps of a cached prefix, then the rest. */
export interface ImagePrefill {
  /** Where a kept prefix of `n` positions must end (never inside an image). */
  keep(n: number): number;
  /**
   * Evaluates the prompt into the slot after what it holds, up to its last run of text (text runs as prompt tokens of
   * the slot loop's steps, images encoded and decoded between steps); returns that last run's tokens.
   */
  prefill(slot: Slot, signal: AbortSignal): Promise<Token[]>;
}

export function imagePrefill(o: {
  prompt: ImagePrompt;
  slots: SlotLoop;
  projector: Projector;
  context: LlamaContext;
  /** Encodings kept across requests: an image kept there is not encoded again. */
  encodes: ImageEncodes;
  onEncode: (seconds: number) => void;
}): ImagePrefill {
  return {
    keep: (n) => keepWholeImages(o.prompt, n),
    async prefill(slot, signal) {
      const parts = partsFrom(o.prompt, slot.tokens.length);
      const last = parts.pop();
      if (last?.kind !== "text") throw new Error("a prompt with images must end with text");
      for (const part of parts) {
        if (signal.aborted) throw clientClosed();
        if (part.kind === "text") {
          // Intermediate text: no token is sampled after it.
          await o.slots.evaluate(slot, part.tokens, async () => 0);
          continue;
        }
        const cells = new Array<Token>(part.nPos).fill(imageCell(part.id));
        await o.slots.decodeOther(slot, cells, (sequenceId, position) =>
          o.encodes.with(
            part.id,
            async () => {
              const started = performance.now();
              const media = await o.projector.encode(part.source, part.index);
              o.onEncode((performance.now() - started) / 1000);
              return media;
            },
            (media) => o.projector.decodeMedia(o.context, media, sequenceId, position).then(() => undefined),
          ),
        );
      }
      if (signal.aborted) throw clientClosed();
      return last.tokens;
    },
  };
}
