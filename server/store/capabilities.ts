// What a model can do, from its GGUF header, its layers and its chat template.
import { templateFeatures } from "../chat/features.ts";

/**
 * What a model can do, as Ollama reports it: rerankers (a rank pooling head) only rerank, embedding models (GGUF
 * pooling type) only embed; others complete, plus
 * "vision" when they have a projector, "tools" when their chat template renders tools given to it (the engine then
 * parses and constrains the calls in the template's format) and "thinking" when the template has a thinking section.
 * The template is the Modelfile TEMPLATE (Go) when there is one, else the GGUF's Jinja template.
 */
export function modelCapabilities(m: {
  isEmbedding: boolean;
  /** A rank pooling head: the model only reranks (as llama-server serves such a model). */
  isReranker?: boolean;
  hasProjector: boolean;
  goTemplate?: string | undefined;
  jinjaTemplate?: string | undefined;
}): string[] {
  if (m.isReranker) return ["rerank"];
  if (m.isEmbedding) return ["embedding"];
  const caps = ["completion"];
  const template =
    m.goTemplate !== undefined
      ? ({ kind: "go", text: m.goTemplate } as const)
      : m.jinjaTemplate
        ? ({ kind: "jinja", text: m.jinjaTemplate } as const)
        : undefined;
  const features = template ? templateFeatures(template) : undefined;
  if (features?.tools) caps.push("tools");
  if (features?.thinking) caps.push("thinking");
  if (m.hasProjector) caps.push("vision");
  return caps;
}
