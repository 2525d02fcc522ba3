// A tiny random reranker: the tiny llama's shape and SPM vocabulary (tiny.ts, so text goes through a real
// tokenizer) on the qwen3 architecture with a rank pooling head, as Qwen3-Reranker GGUFs have one: pooling type rank,
// a classification head (cls.output.weight, labels "yes" and "no") read at the last token and soft-maxed. llama.cpp
// scores a (query, document) pair as the head's first output. The scores are random but deterministic: a document's
// score depends on its text and the query's.
import { llamaMetadata, llamaTensorShapes } from "./llama.ts";
import { makeRng } from "./numeric.ts";
import { TINY_SHAPE, tinyVocab } from "./tiny.ts";
import { GGML_TYPE, GGUF_TYPE, kv, type GgufMetadata } from "./types.ts";
import { fillF32, writeGguf, type TensorSpec, type WrittenGguf } from "./writer.ts";

/** llama.cpp's LLAMA_POOLING_TYPE_RANK. */
const POOLING_RANK = 4;

export async function writeTinyReranker(file: string, opts: { seed?: number } = {}): Promise<WrittenGguf> {
  const rng = makeRng(opts.seed ?? 7);
  const vocab = tinyVocab();
  const E = TINY_SHAPE.nEmbd;
  const headDim = E / TINY_SHAPE.nHead;
  const gauss = (std: number) => fillF32(() => rng.gauss() * std);
  const tensors: TensorSpec[] = [];
  for (const t of llamaTensorShapes(TINY_SHAPE, vocab.size)) {
    const std =
      t.role === "token_embd" || t.role === "output" ? 0.5 : t.role === "attn_q" || t.role === "attn_k" ? 0.3 : 0.1;
    tensors.push({
      name: t.name,
      dims: t.dims,
      type: GGML_TYPE.F32,
      fill: t.role === "norm" ? fillF32(() => 1) : gauss(std),
    });
    // Qwen3 normalises each head's queries and keys.
    const layer = /^blk\.(\d+)\.attn_k\.weight$/.exec(t.name)?.[1];
    if (layer !== undefined)
      for (const n of ["attn_q_norm", "attn_k_norm"])
        tensors.push({
          name: `blk.${layer}.${n}.weight`,
          dims: [headDim],
          type: GGML_TYPE.F32,
          fill: fillF32(() => 1),
        });
  }
  tensors.push({ name: "cls.output.weight", dims: [E, 2], type: GGML_TYPE.F32, fill: gauss(1) });
  const llama = llamaMetadata(TINY_SHAPE, vocab, { name: "tiny-reranker", weightType: GGML_TYPE.F32 });
  const metadata: GgufMetadata = {};
  for (const [key, value] of Object.entries(llama)) metadata[key.replace(/^llama\./, "qwen3.")] = value;
  metadata["general.architecture"] = kv.str("qwen3");
  metadata["qwen3.pooling_type"] = kv.u32(POOLING_RANK);
  metadata["qwen3.classifier.output_labels"] = kv.arr(GGUF_TYPE.STRING, ["yes", "no"]);
  // A reranker ends each input with the end-of-sequence token, where the head reads.
  metadata["tokenizer.ggml.add_eos_token"] = kv.bool(true);
  return writeGguf(file, metadata, tensors);
}
