// One entry point for both template dialects: a model's chat template is the GGUF's Jinja template or a Modelfile
// TEMPLATE (Go text/template, Ollama's), rendered from the same chat data.
import { cachedRenderer } from "../template/index.ts";
import { goTemplateData, type GoTemplateData } from "./go-data.ts";
import { renderJinja, type ChatRenderInput } from "./jinja.ts";

export type { ChatRenderInput } from "./jinja.ts";

export interface ChatTemplate {
  kind: "jinja" | "go";
  text: string;
}

/** Renders a Go template with its data (the engine's is injected; tests give their own). */
export type GoRenderer = (template: string, data: GoTemplateData) => string;

const defaultGo: GoRenderer = cachedRenderer();

/**
 * The prompt text. A Go template renders the conversation as Ollama does: it has no generation prompt switch (its
 * text after the last message opens the assistant's turn).
 */
export function renderChat(t: ChatTemplate, input: ChatRenderInput, go: GoRenderer = defaultGo): string {
  if (t.kind === "jinja") return renderJinja(t.text, input);
  return go(t.text, goTemplateData(input.messages, input.tools ?? [], input.think));
}
