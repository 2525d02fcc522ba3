// Benchmark-size random llamas in Q8_0: real compute and memory traffic, meaningless text. Control tokens are pushed
// far down through a bias channel (as in tiny.ts), so generation practically never ends early and a benchmark's
// token counts equal its max_tokens.
import {
  baseVocab,
  llamaMetadata,
  llamaTensorShapes,
  SPM_SPACE,
  type LlamaShape,
  type TensorRole,
  type Vocab,
} from "./llama.ts";
import { makeRng, Q8_0_BLOCK_BYTES, type Rng } from "./numeric.ts";
import { GGML_TYPE, TOKEN_TYPE, tensorByteSize, type GgmlType } from "./types.ts";
import {
  fillF32,
  fillFromPool,
  fillQ8_0Random,
  layoutTensors,
  withRowOverrides,
  writeGguf,
  type TensorFill,
  type TensorSpec,
  type WrittenGguf,
} from "./writer.ts";

export type BenchShapeName = "250m" | "1b" | "8b" | "step";

/**
 * A bench model's shape; `pooled`: its quants are copied from a pool of random blocks (writer.ts fillFromPool), so a
 * GPU-sized model is written in seconds.
 */
export type BenchShape = LlamaShape & { nVocab: number; pooled?: boolean };

export const BENCH_SHAPES: Record<BenchShapeName, BenchShape> = {
  // ~250 MB in Q8_0: the "small but real" size; 16 layers x 1024 with grouped-query attention.
  "250m": { nLayer: 16, nEmbd: 1024, nFf: 2816, nHead: 16, nHeadKv: 4, nCtx: 2048, nVocab: 32000 },
  // TinyLlama-1.1B's shape: ~1.1 GiB in Q8_0.
  "1b": { nLayer: 22, nEmbd: 2048, nFf: 5632, nHead: 32, nHeadKv: 4, nCtx: 2048, nVocab: 32000 },
  // Llama-3.1-8B's shape (its 128256-token vocabulary too): ~8.5 GB in Q8_0, GPU-sized work.
  "8b": { nLayer: 32, nEmbd: 4096, nFf: 14336, nHead: 32, nHeadKv: 8, nCtx: 8192, nVocab: 128256, pooled: true },
  // Llama-3's 128k vocabulary on one tiny layer (~35 MB): the decode is short, so a step's host time (logits,
  // sampling, detokenizing, streaming, scheduling) is what `npm run bench step` sees.
  step: { nLayer: 1, nEmbd: 128, nFf: 256, nHead: 2, nHeadKv: 1, nCtx: 8192, nVocab: 128256 },
};

/** Bytes of a pooled model's random block pool per weight scale. */
const POOL_BYTES = 16 << 20;

export interface BenchModelOptions {
  shape: BenchShapeName;
  seed?: number;
  /**
   * Weight of the bias channel for control/end-of-generation tokens in output.weight. The default (-1000) makes
   * their logits far below any other token's whatever the hidden state, so generation runs to max_tokens.
   */
  controlLogit?: number;
}

const WEIGHT_TYPE: GgmlType = GGML_TYPE.Q8_0;
const LETTERS = "etaoinshrdlcumwfgypbvkjxqz";

/**
 * Base tokens, single characters, then random letter pieces whose prefixes are added first so SPM merges reach them.
 */
export function benchVocab(nVocab: number, rng: Rng): Vocab {
  const vocab = baseVocab();
  const charset = LETTERS + LETTERS.toUpperCase() + "0123456789.,!?;:'\"-()[]{}<>/=+*#@$%&_|\n";
  vocab.add(SPM_SPACE, -1, TOKEN_TYPE.NORMAL);
  for (const c of charset) vocab.add(c, -2, TOKEN_TYPE.NORMAL);
  while (vocab.size < nVocab) {
    const len = 2 + (rng.next() % 7);
    let w = rng.next() & 1 ? SPM_SPACE : "";
    for (let i = 0; i < len; i++) w += LETTERS[Math.floor(Math.pow(rng.uniform(), 2) * LETTERS.length)];
    for (let i = 2; i <= w.length && vocab.size < nVocab; i++)
      vocab.add(w.slice(0, i), -3 - vocab.size * 1e-4 + i * 0.3, TOKEN_TYPE.NORMAL);
  }
  return vocab;
}

const weightTypeOf = (role: TensorRole): GgmlType => (role === "norm" ? GGML_TYPE.F32 : WEIGHT_TYPE);

/** Tensor names, dims and types of a bench model (no data): for size arithmetic without writing a gigabyte. */
export function benchTensorPlan(shape: BenchShapeName): Array<{ name: string; dims: number[]; type: GgmlType }> {
  const s = BENCH_SHAPES[shape];
  return llamaTensorShapes(s, s.nVocab).map((t) => ({ name: t.name, dims: t.dims, type: weightTypeOf(t.role) }));
}

/** Bytes of the tensor data section of a bench model. */
export function benchDataBytes(shape: BenchShapeName): number {
  const last = layoutTensors(benchTensorPlan(shape)).at(-1)!;
  return last.offset + tensorByteSize(last.type, last.dims);
}

// Q8_0 quants are uniform in [-64, 63] (std ≈ 37), so scale = std / 37 gives weights of the wanted std.
const q8Random = (rng: Rng, std: number) => fillQ8_0Random(rng, std / 37);

/** Fills from one pool of random blocks per std (made on first use). */
function q8Pooled(): (rng: Rng, std: number) => TensorFill {
  const pools = new Map<number, Buffer>();
  return (rng, std) => {
    let pool = pools.get(std);
    if (!pool) {
      pool = Buffer.alloc(Math.floor(POOL_BYTES / Q8_0_BLOCK_BYTES) * Q8_0_BLOCK_BYTES);
      q8Random(rng, std)(pool, { firstRow: 0, rowCount: 1, rowLength: (pool.length / Q8_0_BLOCK_BYTES) * 32 });
      pools.set(std, pool);
    }
    return fillFromPool(pool, rng);
  };
}

/** Sets element 0 of every row to the block's largest quant: a constant positive "bias" value in every embedding. */
function withBiasChannel(base: TensorFill): TensorFill {
  return (out, chunk) => {
    base(out, chunk);
    const rowBytes = (chunk.rowLength / 32) * Q8_0_BLOCK_BYTES;
    for (let r = 0; r < chunk.rowCount; r++) out[r * rowBytes + 2] = 127;
  };
}

export async function writeBenchModel(file: string, opts: BenchModelOptions): Promise<WrittenGguf> {
  const s = BENCH_SHAPES[opts.shape];
  const rng = makeRng(opts.seed ?? 7);
  const q8 = s.pooled ? q8Pooled() : q8Random;
  const controlLogit = opts.controlLogit ?? -1000;
  const vocab = benchVocab(s.nVocab, rng);
  // Layers never write to dim 0 (row 0 of the output projections is zero), so the residual stream keeps the
  // embedding's constant bias value there up to output.weight, whose control rows read only that dim.
  const noWriteToDim0 = (std: number) =>
    withRowOverrides(WEIGHT_TYPE, q8(rng, std), (row) => (row === 0 ? [] : undefined));
  const controlRow = new Float32Array(s.nEmbd);
  controlRow[0] = controlLogit;

  const fillFor: Record<TensorRole, () => TensorFill> = {
    token_embd: () => withBiasChannel(q8(rng, 0.5)),
    norm: () => fillF32(() => 1),
    attn_q: () => q8(rng, 0.02),
    attn_k: () => q8(rng, 0.02),
    attn_v: () => q8(rng, 0.02),
    attn_output: () => noWriteToDim0(0.02),
    ffn_gate: () => q8(rng, 0.02),
    ffn_up: () => q8(rng, 0.02),
    ffn_down: () => noWriteToDim0(0.02),
    output: () =>
      withRowOverrides(WEIGHT_TYPE, q8(rng, 0.05), (row) => (vocab.isControl(row) ? controlRow : undefined)),
  };
  const tensors: TensorSpec[] = llamaTensorShapes(s, vocab.size).map((t) => ({
    name: t.name,
    dims: t.dims,
    type: weightTypeOf(t.role),
    fill: fillFor[t.role](),
  }));
  const name = `bench-random-llama-${s.nLayer}L-${s.nEmbd}d`;
  return writeGguf(file, llamaMetadata(s, vocab, { name, weightType: WEIGHT_TYPE }), tensors);
}
