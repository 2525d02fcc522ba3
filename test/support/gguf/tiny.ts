// A tiny random llama (2 layers x 64, F32, ~0.8 MB) with a byte-level SPM vocabulary of common English words and
// ChatML control tokens. It loads in milliseconds and exercises every code path: tokenization, chat templates,
// special tokens, sampling, end-of-generation.
import { familyMetadata, type TinyFamily } from "./families.ts";
import { baseVocab, llamaMetadata, llamaTensorShapes, SPM_SPACE, type LlamaShape, type TensorRole } from "./llama.ts";
import { makeRng } from "./numeric.ts";
import { GGML_TYPE, TOKEN_TYPE } from "./types.ts";
import { fillF32, withRowOverrides, writeGguf, type TensorFill, type WrittenGguf } from "./writer.ts";

export interface TinyModelOptions {
  seed?: number;
  /**
   * How far control tokens (end-of-generation included) are pushed down: -3 (default) ends generation now and then,
   * -8 practically never, higher values sooner.
   */
  controlLogit?: number;
  /** Trained context length in the metadata (default 512): longer lets a test keep a never-ending answer going. */
  contextLength?: number;
  /** general.name (default "tiny-random-llama"). */
  name?: string;
  /** A model family's chat template and special tokens (families.ts): written into the GGUF instead of ChatML's. */
  family?: TinyFamily;
  /** Tokens made likely: their bias channel weight (a few units above the words' 0.15 makes them dominate). */
  favored?: Record<string, number>;
  /**
   * Scales the query and key weights (default 1): sharper attention, which then depends on the content and position of
   * what it attends to instead of averaging over the whole context (the vision pair's text model uses it).
   */
  attentionSharpness?: number;
}

const CONTROL_LOGIT_OFFSET = 2.5;

export const TINY_SHAPE: LlamaShape = { nLayer: 2, nEmbd: 64, nFf: 128, nHead: 4, nHeadKv: 4, nCtx: 512 };

const WORDS = (
  "the of and to a in is you that it he was for on are as with his they I at be this have from or one had by " +
  "word but not what all were we when your can said there use an each which she do how their if will up other about out " +
  "many then them these so some her would make like him into time has look two more write go see number no way could people " +
  "my than first water been call who oil its now find long down day did get come made may part hello world model server llama " +
  "chat user assistant system answer question yes sky blue red green cat dog sun moon tree"
).split(" ");
const CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:'\"-()[]{}<>/=+*#@$%&_|";

/** Base tokens, then single characters, then every word's prefixes (word-initial ▁ forms and word-internal forms). */
export function tinyVocab() {
  const vocab = baseVocab();
  const pieces = new Map<string, number>();
  const setScore = (p: string, s: number) => {
    if ((pieces.get(p) ?? -Infinity) < s) pieces.set(p, s);
  };
  setScore(SPM_SPACE, -1);
  for (const c of CHARS) setScore(c, -2);
  WORDS.forEach((w, rank) => {
    for (const form of [SPM_SPACE + w, w]) {
      for (let i = 2; i <= form.length; i++) setScore(form.slice(0, i), -3 - rank * 0.01 + i * 0.5);
    }
  });
  for (const [p, s] of pieces) vocab.add(p, s, TOKEN_TYPE.NORMAL);
  return vocab;
}

export async function writeTinyModel(file: string, opts: TinyModelOptions = {}): Promise<WrittenGguf> {
  const rng = makeRng(opts.seed ?? 42);
  // The bias channel's weight for control tokens. The offset calibrates the documented behaviour (measured over 24
  // sampled 128-token completions: -3 → ~60% end with end-of-generation, -8 → none).
  const controlWeight = (opts.controlLogit ?? -3) + CONTROL_LOGIT_OFFSET;
  const vocab = tinyVocab();
  const family = opts.family;
  for (const t of family?.control ?? []) vocab.add(t, 0, TOKEN_TYPE.CONTROL);
  for (const t of family?.userDefined ?? []) vocab.add(t, 0, TOKEN_TYPE.USER_DEFINED);
  // A family's user-defined tokens (<tool_call>, <think>) are as unlikely as control tokens.
  const pushedDown = (t: number) => vocab.isControl(t) || vocab.types[t] === TOKEN_TYPE.USER_DEFINED;
  const favored = new Map(Object.entries(opts.favored ?? {}).map(([t, w]) => [vocab.id(t), w]));
  const E = TINY_SHAPE.nEmbd,
    V = vocab.size;

  // Why random weights still read like word pieces: embedding dim 0 is a constant "bias" channel, and output.weight
  // uses it to push control and byte tokens down and whole words up. The layers never write to dim 0 (row 0 of their
  // output projections is zero): otherwise the residual stream could flip its sign and turn "down" into "up".
  const embd = new Float32Array(E * V);
  for (let t = 0; t < V; t++) {
    embd[t * E] = 1.0;
    for (let j = 1; j < E; j++) embd[t * E + j] = rng.gauss() * 0.1;
  }
  const outW = new Float32Array(E * V);
  for (let t = 0; t < V; t++) {
    const piece = vocab.tokens[t]!;
    outW[t * E] = favored.has(t)
      ? favored.get(t)!
      : pushedDown(t)
        ? controlWeight
        : vocab.types[t] === TOKEN_TYPE.BYTE
          ? -0.6
          : piece.startsWith(SPM_SPACE) && piece.length > 2
            ? 0.15
            : -0.1;
    for (let j = 1; j < E; j++) outW[t * E + j] = rng.gauss() * 0.5;
  }

  const gauss = (std: number) => fillF32(() => rng.gauss() * std);
  const noWriteToDim0 = (base: TensorFill) =>
    withRowOverrides(GGML_TYPE.F32, base, (row) => (row === 0 ? [] : undefined));
  const fillFor: Record<TensorRole, () => TensorFill> = {
    token_embd: () => fillF32((i) => embd[i]!),
    norm: () => fillF32(() => 1),
    attn_q: () => gauss(0.1 * (opts.attentionSharpness ?? 1)),
    attn_k: () => gauss(0.1 * (opts.attentionSharpness ?? 1)),
    attn_v: () => gauss(0.05),
    attn_output: () => noWriteToDim0(gauss(0.05)),
    ffn_gate: () => gauss(0.1),
    ffn_up: () => gauss(0.1),
    ffn_down: () => noWriteToDim0(gauss(0.05)),
    output: () => fillF32((i) => outW[i]!),
  };
  const tensors = llamaTensorShapes(TINY_SHAPE, V).map((t) => ({
    name: t.name,
    dims: t.dims,
    type: GGML_TYPE.F32,
    fill: fillFor[t.role](),
  }));
  const metadata = llamaMetadata({ ...TINY_SHAPE, nCtx: opts.contextLength ?? TINY_SHAPE.nCtx }, vocab, {
    name: opts.name ?? family?.name ?? "tiny-random-llama",
    weightType: GGML_TYPE.F32,
  });
  return writeGguf(file, family ? { ...metadata, ...familyMetadata(family, vocab) } : metadata, tensors);
}
