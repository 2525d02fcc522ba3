// Parsed templates are reused: a model's TEMPLATE is rendered on every request, parsing it once is enough.
import type { Template } from "./ast.ts";
import { parseTemplate } from "./parser.ts";
import { executeTemplate } from "./render.ts";

/** A renderer that parses each distinct template source once (bounded LRU). */
export function cachedRenderer(max = 64): (src: string, data: unknown) => string {
  const cache = new Map<string, Template>();
  return (src, data) => {
    let tpl = cache.get(src);
    if (tpl) {
      cache.delete(src);
    } else {
      tpl = parseTemplate(src);
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
    }
    cache.set(src, tpl);
    return executeTemplate(tpl, data);
  };
}
