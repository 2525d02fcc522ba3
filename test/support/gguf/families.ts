// Model families for the tiny random llama (tiny.ts): each writes a family's real Jinja chat template (fixtures in
// test/fixtures/chat-templates, as the models ship them) and the special tokens it uses into the GGUF, so the
// server renders, parses and constrains tool calls and thinking as it would for a real model of that family.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Vocab } from "./llama.ts";
import { kv, type GgufMetadata } from "./types.ts";

export interface TinyFamily {
  name: string;
  /** The chat template fixture's file name. */
  template: string;
  control: string[];
  userDefined: string[];
  bos: string;
  eos: string;
  /** The end-of-turn token, when it is not the end of sequence. */
  eot?: string;
}

const TEMPLATES = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../fixtures/chat-templates");

export const FAMILIES = {
  "qwen2.5": {
    name: "tiny-qwen2.5",
    template: "qwen2.5-instruct.jinja",
    control: [],
    userDefined: ["<tool_call>", "</tool_call>"],
    bos: "<|endoftext|>",
    eos: "<|im_end|>",
  },
  qwen3: {
    name: "tiny-qwen3",
    template: "qwen3.jinja",
    control: [],
    userDefined: ["<tool_call>", "</tool_call>", "<think>", "</think>"],
    bos: "<|endoftext|>",
    eos: "<|im_end|>",
  },
  "llama3.1": {
    name: "tiny-llama3.1",
    template: "llama3.1-instruct.jinja",
    control: [
      "<|begin_of_text|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|eot_id|>",
      "<|eom_id|>",
      "<|python_tag|>",
    ],
    userDefined: [],
    bos: "<|begin_of_text|>",
    eos: "<|eot_id|>",
  },
  mistral: {
    name: "tiny-mistral-nemo",
    template: "mistral-nemo-instruct.jinja",
    control: [
      "[INST]",
      "[/INST]",
      "[TOOL_CALLS]",
      "[AVAILABLE_TOOLS]",
      "[/AVAILABLE_TOOLS]",
      "[TOOL_RESULTS]",
      "[/TOOL_RESULTS]",
    ],
    userDefined: [],
    bos: "<s>",
    eos: "</s>",
  },
} satisfies Record<string, TinyFamily>;

export type FamilyName = keyof typeof FAMILIES;

export function familyTemplate(f: TinyFamily): string {
  return fs.readFileSync(path.join(TEMPLATES, f.template), "utf8");
}

/** The metadata a family replaces: its chat template, BOS, EOS and end-of-turn tokens. */
export function familyMetadata(f: TinyFamily, vocab: Vocab): GgufMetadata {
  return {
    "tokenizer.chat_template": kv.str(familyTemplate(f)),
    "tokenizer.ggml.bos_token_id": kv.u32(vocab.id(f.bos)),
    "tokenizer.ggml.eos_token_id": kv.u32(vocab.id(f.eos)),
    "tokenizer.ggml.eot_token_id": kv.u32(vocab.id(f.eot ?? f.eos)),
    // Llama 3's template writes BOS itself.
    "tokenizer.ggml.add_bos_token": kv.bool(f.bos !== "<|begin_of_text|>"),
  };
}
