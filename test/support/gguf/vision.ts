// A tiny random vision pair that llama.cpp's multimodal library (mtmd) loads: the tiny llama text model (tiny.ts) and
// a LLaVA-1.5-style projector GGUF (general.architecture "clip", general.type "mmproj", clip.projector_type "mlp"):
// a CLIP ViT (patch embedding, class embedding, learned positions, pre-norm, pre-LN transformer blocks) whose
// second-to-last layer's patch outputs go through a two-layer GELU MLP into the text model's embedding space.
// Names and keys are llama.cpp's (tools/mtmd/clip-impl.h, clip.cpp; conversion/base.py MmprojModel).
// Why the MLP projector: mtmd preprocesses it with a fixed-size square resize (no tiling, no slices), needs no image
// marker tokens in the text vocabulary, decodes image embeddings with ordinary causal attention and 1-D positions (one
// position per embedding); every other vision projector adds one of these.
// Shape: 64 x 64 images in 16 x 16 patches = 16 image embeddings per image, a 64-wide 2-layer ViT: encoding takes well
// under a millisecond of compute, and 30 images fit a 512-token context.
// `npm run gguf:vision -- <dir>` writes <dir>/model.gguf and <dir>/mmproj.gguf (--control-logit -8
// --context-length 131072: a model whose answers practically never end, for streams a test holds open).
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { makeRng } from "./numeric.ts";
import { TINY_SHAPE, writeTinyModel } from "./tiny.ts";
import { GGML_TYPE, GGUF_TYPE, kv, type GgmlType, type GgufMetadata } from "./types.ts";
import { fillF16, fillF32, writeGguf, type TensorFill, type TensorSpec, type WrittenGguf } from "./writer.ts";

export interface VisionProjectorShape {
  /** Side of the square image the encoder sees (clip.vision.image_size). */
  imageSize: number;
  patchSize: number;
  nEmbd: number;
  nHead: number;
  nFf: number;
  /** Encoder blocks in the file; LLaVA's projector reads the output of the second-to-last one. */
  nLayer: number;
  /** The text model's embedding width: the projector's output. */
  nEmbdText: number;
}

export const TINY_PROJECTOR: VisionProjectorShape = {
  imageSize: 64,
  patchSize: 16,
  nEmbd: 64,
  nHead: 4,
  nFf: 128,
  nLayer: 2,
  nEmbdText: TINY_SHAPE.nEmbd,
};

/** Image embeddings (= tokens in the text model's context) per image. */
export const imageTokens = (s: VisionProjectorShape = TINY_PROJECTOR): number => (s.imageSize / s.patchSize) ** 2;

// CLIP's own normalization (OpenAI CLIP ViT-L/14, as LLaVA-1.5 ships it).
const IMAGE_MEAN = [0.48145466, 0.4578275, 0.40821073];
const IMAGE_STD = [0.26862954, 0.26130258, 0.27577711];

export function projectorMetadata(s: VisionProjectorShape, name: string): GgufMetadata {
  return {
    "general.architecture": kv.str("clip"),
    "general.type": kv.str("mmproj"),
    "general.name": kv.str(name),
    "general.alignment": kv.u32(32),
    "general.file_type": kv.u32(1), // mostly F16
    "clip.projector_type": kv.str("mlp"),
    "clip.has_vision_encoder": kv.bool(true),
    "clip.use_gelu": kv.bool(false), // CLIP's quick GELU in the encoder's feed-forward
    "clip.vision.projection_dim": kv.u32(s.nEmbdText),
    "clip.vision.image_size": kv.u32(s.imageSize),
    "clip.vision.patch_size": kv.u32(s.patchSize),
    "clip.vision.embedding_length": kv.u32(s.nEmbd),
    "clip.vision.feed_forward_length": kv.u32(s.nFf),
    "clip.vision.block_count": kv.u32(s.nLayer),
    "clip.vision.attention.head_count": kv.u32(s.nHead),
    "clip.vision.attention.layer_norm_epsilon": kv.f32(1e-5),
    "clip.vision.image_mean": kv.arr(GGUF_TYPE.FLOAT32, IMAGE_MEAN),
    "clip.vision.image_std": kv.arr(GGUF_TYPE.FLOAT32, IMAGE_STD),
  };
}

/**
 * The projector's tensors, dims in GGUF order (ne0 = input features). Matrices are F16 and vectors F32, as llama.cpp's
 * converter writes an F16 mmproj; the patch embedding is a conv kernel [patch, patch, 3 channels, n_embd].
 */
export function projectorTensors(s: VisionProjectorShape, seed: number, imageStd = 1): TensorSpec[] {
  const rng = makeRng(seed);
  const E = s.nEmbd;
  const nPos = imageTokens(s) + 1; // + the class embedding
  const gauss = (std: number, type: GgmlType): TensorFill =>
    (type === GGML_TYPE.F16 ? fillF16 : fillF32)(() => rng.gauss() * std);
  const constant = (v: number): TensorFill => fillF32(() => v);
  const t = (name: string, dims: number[], type: GgmlType, fill: TensorFill): TensorSpec => ({
    name,
    dims,
    type,
    fill,
  });
  const F16 = GGML_TYPE.F16,
    F32 = GGML_TYPE.F32;
  const patchInputs = s.patchSize * s.patchSize * 3;
  const tensors: TensorSpec[] = [
    // Scaled so that a patch's embedding has unit spread over normalized pixels: the image is what the output sees.
    t("v.patch_embd.weight", [s.patchSize, s.patchSize, 3, E], F16, gauss(1 / Math.sqrt(patchInputs), F16)),
    t("v.class_embd", [E], F32, gauss(0.02, F32)),
    t("v.position_embd.weight", [E, nPos], F16, gauss(0.02, F16)),
    t("v.pre_ln.weight", [E], F32, constant(1)),
    t("v.pre_ln.bias", [E], F32, constant(0)),
  ];
  for (let l = 0; l < s.nLayer; l++) {
    const p = `v.blk.${l}.`;
    for (const m of ["attn_q", "attn_k", "attn_v", "attn_out"]) {
      tensors.push(t(`${p}${m}.weight`, [E, E], F16, gauss(1 / Math.sqrt(E), F16)));
      tensors.push(t(`${p}${m}.bias`, [E], F32, constant(0)));
    }
    tensors.push(
      t(`${p}ln1.weight`, [E], F32, constant(1)),
      t(`${p}ln1.bias`, [E], F32, constant(0)),
      t(`${p}ffn_up.weight`, [E, s.nFf], F16, gauss(1 / Math.sqrt(E), F16)),
      t(`${p}ffn_up.bias`, [s.nFf], F32, constant(0)),
      t(`${p}ffn_down.weight`, [s.nFf, E], F16, gauss(1 / Math.sqrt(s.nFf), F16)),
      t(`${p}ffn_down.bias`, [E], F32, constant(0)),
      t(`${p}ln2.weight`, [E], F32, constant(1)),
      t(`${p}ln2.bias`, [E], F32, constant(0)),
    );
  }
  // The MLP projector. Its output is shaped like the tiny text model's token embeddings (tiny.ts): dimension 0 is the
  // text model's constant "bias" channel (1.0 in every token embedding), the rest carries the image, with a spread of
  // `imageStd` (ten times a token embedding's by default) so that the image clearly steers the text.
  const H = s.nEmbdText;
  const outStd = imageStd / Math.sqrt(H * 0.4);
  tensors.push(
    t("mm.0.weight", [E, H], F16, gauss(1 / Math.sqrt(E), F16)),
    t("mm.0.bias", [H], F32, constant(0)),
    // Row r (elements [r * H, (r + 1) * H)) makes output feature r: row 0 would write the bias channel.
    t(
      "mm.2.weight",
      [H, s.nEmbdText],
      F16,
      fillF16((i) => (i < H ? 0 : rng.gauss() * outStd)),
    ),
    t(
      "mm.2.bias",
      [s.nEmbdText],
      F32,
      fillF32((i) => (i === 0 ? 1 : 0)),
    ),
  );
  return tensors;
}

export function writeTinyProjector(
  file: string,
  opts: { seed?: number; shape?: VisionProjectorShape; imageStd?: number } = {},
): Promise<WrittenGguf> {
  const shape = opts.shape ?? TINY_PROJECTOR;
  return writeGguf(
    file,
    projectorMetadata(shape, "tiny-random-llava-mmproj"),
    projectorTensors(shape, opts.seed ?? 7, opts.imageStd),
  );
}

export interface VisionPair {
  model: string;
  mmproj: string;
}

export interface VisionPairOptions {
  seed?: number;
  /** The text model's end-of-generation logit (tiny.ts): -8 = practically never stops (streams that stay open). */
  controlLogit?: number;
  /** The text model's trained context (512 by default): a large one lets a stream run as long as a test needs. */
  contextLength?: number;
}

/** Writes <dir>/model.gguf (the tiny llama) and <dir>/mmproj.gguf (its projector). */
export async function writeVisionPair(dir: string, opts: VisionPairOptions = {}): Promise<VisionPair> {
  fs.mkdirSync(dir, { recursive: true });
  const pair = { model: path.join(dir, "model.gguf"), mmproj: path.join(dir, "mmproj.gguf") };
  const seed = opts.seed ?? 42;
  // End-of-generation now and then (as the tiny model's default), so answers have varied lengths. Sharper attention
  // than the plain tiny model's: its near-uniform attention averaged the image embeddings, so that the order of
  // several images made no difference and greedy answers fell into the same loops whatever the image.
  await writeTinyModel(pair.model, {
    seed,
    name: "tiny-random-llava",
    attentionSharpness: 4,
    ...(opts.controlLogit !== undefined ? { controlLogit: opts.controlLogit } : {}),
    ...(opts.contextLength !== undefined ? { contextLength: opts.contextLength } : {}),
  });
  await writeTinyProjector(pair.mmproj, { seed: seed + 1 });
  return pair;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { "control-logit": { type: "string" }, "context-length": { type: "string" } },
  });
  const arg = positionals[0];
  if (!arg) {
    process.stderr.write(
      "usage: npm run gguf:vision -- <dir> [--control-logit -8] [--context-length 131072]\n" +
        "  writes <dir>/model.gguf and <dir>/mmproj.gguf; the options make a model that practically never stops\n",
    );
    process.exit(2);
  }
  const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  // Under npm run, relative paths mean the caller's directory (INIT_CWD), not the package root.
  const pair = await writeVisionPair(path.resolve(process.env.INIT_CWD ?? process.cwd(), arg), {
    ...(values["control-logit"] !== undefined ? { controlLogit: number(values["control-logit"]) } : {}),
    ...(values["context-length"] !== undefined ? { contextLength: number(values["context-length"]) } : {}),
  });
  for (const f of [pair.model, pair.mmproj]) process.stdout.write(`${f} (${fs.statSync(f).size} bytes)\n`);
}
