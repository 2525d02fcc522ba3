// What a model can do, from its GGUF header and layers.

/**
 * What a model can do, as Ollama reports it: embedding models (GGUF pooling type) only embed; others complete, plus
 * "vision" when they have a projector. The serving routes check requests against this list: "tools", "thinking" and
 * "insert" join it only once the engine calls tools, separates thinking and fills in the middle (a template that
 * renders tools does not make the server call them).
 */
export function modelCapabilities(m: { isEmbedding: boolean; hasProjector: boolean }): string[] {
  if (m.isEmbedding) return ["embedding"];
  const caps = ["completion"];
  if (m.hasProjector) caps.push("vision");
  return caps;
}
