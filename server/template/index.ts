// Go text/template engine for Ollama-style chat templates (Modelfile TEMPLATE).
export type { Template } from "./ast.ts";
export { TemplateError } from "./errors.ts";
export { parseTemplate } from "./parser.ts";
export { executeTemplate, renderTemplate } from "./render.ts";
export { templateIdentifiers } from "./identifiers.ts";
export { cachedRenderer } from "./cache.ts";
