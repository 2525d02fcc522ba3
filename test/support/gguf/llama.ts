// What every generated test model shares: the llama architecture's tensor list and metadata, an SPM ("llama")
// vocabulary builder with byte fallback and ChatML control tokens, and the ChatML chat template.
import { GGML_TYPE, GGUF_TYPE, kv, TOKEN_TYPE, type GgmlType, type GgufMetadata, type TokenType } from "./types.ts";

export const SPM_SPACE = "\u2581"; // ▁, SentencePiece's word-boundary marker

export const CHATML_TEMPLATE =
  "{% for message in messages %}" +
  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export const CHATML_CONTROL_TOKENS = ["<|startoftext|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"] as const;

export class Vocab {
  readonly tokens: string[] = [];
  readonly scores: number[] = [];
  readonly types: TokenType[] = [];
  private readonly ids = new Map<string, number>();

  /** Adds a piece unless present; returns whether it was new. */
  add(piece: string, score: number, type: TokenType): boolean {
    if (this.ids.has(piece)) return false;
    this.ids.set(piece, this.tokens.length);
    this.tokens.push(piece);
    this.scores.push(score);
    this.types.push(type);
    return true;
  }

  id(piece: string): number {
    const id = this.ids.get(piece);
    if (id === undefined) throw new Error(`token ${JSON.stringify(piece)} is not in the vocabulary`);
    return id;
  }

  get size(): number {
    return this.tokens.length;
  }

  /** Control and unknown tokens: what a model should almost never emit when its control logit is strongly negative. */
  isControl(id: number): boolean {
    const t = this.types[id];
    return t === TOKEN_TYPE.CONTROL || t === TOKEN_TYPE.UNKNOWN;
  }
}

/** <unk>, <s>, </s>, the ChatML control tokens and the 256 byte-fallback tokens, in llama.cpp's expected order. */
export function baseVocab(): Vocab {
  const v = new Vocab();
  v.add("<unk>", 0, TOKEN_TYPE.UNKNOWN);
  v.add("<s>", 0, TOKEN_TYPE.CONTROL);
  v.add("</s>", 0, TOKEN_TYPE.CONTROL);
  for (const s of CHATML_CONTROL_TOKENS) v.add(s, 0, TOKEN_TYPE.CONTROL);
  for (let b = 0; b < 256; b++) v.add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, 0, TOKEN_TYPE.BYTE);
  return v;
}

export interface LlamaShape {
  nLayer: number;
  nEmbd: number;
  nFf: number;
  nHead: number;
  nHeadKv: number;
  nCtx: number;
}

export type TensorRole =
  | "token_embd"
  | "norm"
  | "attn_q"
  | "attn_k"
  | "attn_v"
  | "attn_output"
  | "ffn_gate"
  | "ffn_up"
  | "ffn_down"
  | "output";

export interface TensorShape {
  name: string;
  dims: number[];
  role: TensorRole;
}

/** The llama tensors in llama.cpp's conventional order; dims in GGUF order (ne0 = input features). */
export function llamaTensorShapes(s: LlamaShape, nVocab: number): TensorShape[] {
  const E = s.nEmbd;
  const headDim = E / s.nHead;
  if (!Number.isInteger(headDim)) throw new Error(`n_embd ${E} is not divisible by n_head ${s.nHead}`);
  const out: TensorShape[] = [{ name: "token_embd.weight", dims: [E, nVocab], role: "token_embd" }];
  for (let l = 0; l < s.nLayer; l++) {
    const p = `blk.${l}.`;
    out.push(
      { name: p + "attn_norm.weight", dims: [E], role: "norm" },
      { name: p + "attn_q.weight", dims: [E, s.nHead * headDim], role: "attn_q" },
      { name: p + "attn_k.weight", dims: [E, s.nHeadKv * headDim], role: "attn_k" },
      { name: p + "attn_v.weight", dims: [E, s.nHeadKv * headDim], role: "attn_v" },
      { name: p + "attn_output.weight", dims: [s.nHead * headDim, E], role: "attn_output" },
      { name: p + "ffn_norm.weight", dims: [E], role: "norm" },
      { name: p + "ffn_gate.weight", dims: [E, s.nFf], role: "ffn_gate" },
      { name: p + "ffn_up.weight", dims: [E, s.nFf], role: "ffn_up" },
      { name: p + "ffn_down.weight", dims: [s.nFf, E], role: "ffn_down" },
    );
  }
  out.push(
    { name: "output_norm.weight", dims: [E], role: "norm" },
    { name: "output.weight", dims: [E, nVocab], role: "output" },
  );
  return out;
}

/** llama.cpp's general.file_type for a model whose big tensors are of `type`. */
const FILE_TYPE: Record<GgmlType, number> = { [GGML_TYPE.F32]: 0, [GGML_TYPE.F16]: 1, [GGML_TYPE.Q8_0]: 7 };

export function llamaMetadata(s: LlamaShape, vocab: Vocab, opts: { name: string; weightType: GgmlType }): GgufMetadata {
  return {
    "general.architecture": kv.str("llama"),
    "general.name": kv.str(opts.name),
    "general.alignment": kv.u32(32),
    "general.file_type": kv.u32(FILE_TYPE[opts.weightType]),
    "llama.context_length": kv.u32(s.nCtx),
    "llama.embedding_length": kv.u32(s.nEmbd),
    "llama.block_count": kv.u32(s.nLayer),
    "llama.feed_forward_length": kv.u32(s.nFf),
    "llama.attention.head_count": kv.u32(s.nHead),
    "llama.attention.head_count_kv": kv.u32(s.nHeadKv),
    "llama.attention.layer_norm_rms_epsilon": kv.f32(1e-5),
    "llama.rope.dimension_count": kv.u32(s.nEmbd / s.nHead),
    "llama.rope.freq_base": kv.f32(10000),
    "llama.vocab_size": kv.u32(vocab.size),
    "tokenizer.ggml.model": kv.str("llama"),
    "tokenizer.ggml.tokens": kv.arr(GGUF_TYPE.STRING, vocab.tokens),
    "tokenizer.ggml.scores": kv.arr(GGUF_TYPE.FLOAT32, vocab.scores),
    "tokenizer.ggml.token_type": kv.arr(GGUF_TYPE.INT32, vocab.types),
    "tokenizer.ggml.unknown_token_id": kv.u32(vocab.id("<unk>")),
    "tokenizer.ggml.bos_token_id": kv.u32(vocab.id("<s>")),
    "tokenizer.ggml.eos_token_id": kv.u32(vocab.id("<|im_end|>")),
    "tokenizer.ggml.eot_token_id": kv.u32(vocab.id("<|im_end|>")),
    "tokenizer.ggml.padding_token_id": kv.u32(vocab.id("<|endoftext|>")),
    "tokenizer.ggml.add_bos_token": kv.bool(true),
    "tokenizer.ggml.add_eos_token": kv.bool(false),
    "tokenizer.chat_template": kv.str(CHATML_TEMPLATE),
  };
}
