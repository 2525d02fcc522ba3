// JSON output grammars, cached per schema text (building a grammar from a schema is not free).
import fs from "node:fs";
import path from "node:path";
import { LlamaText, type Llama, type LlamaGrammar } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import { nodeLlamaCppDir } from "./native/patched-build.ts";
import { schemaProblem, withDefinitionsAsDefs } from "../common/json-schema-check.ts";
import type { OutputFormat } from "./types.ts";

export class GrammarCache {
  private readonly llama: Llama;
  private readonly cache = new Map<string, Promise<LlamaGrammar>>();

  constructor(llama: Llama) {
    this.llama = llama;
  }

  /**
   * The grammar for `format`; an invalid JSON schema is a BAD_REQUEST. (The HTTP APIs refuse such schemas when they
   * parse a request; this guards every other caller and the compiler.)
   */
  async get(format: OutputFormat | undefined): Promise<LlamaGrammar | undefined> {
    if (format === undefined) return undefined;
    if (format !== "json") {
      const problem = schemaProblem(format.schema);
      if (problem)
        throw new AppError("BAD_REQUEST", `invalid JSON schema in "format": ${problem}`, { param: "format" });
    }
    const key = format === "json" ? "json" : JSON.stringify(format.schema);
    let p = this.cache.get(key);
    if (!p) {
      p =
        format === "json"
          ? jsonGrammar(this.llama)
          : this.llama.createGrammarForJsonSchema(
              withDefinitionsAsDefs(format.schema) as Parameters<Llama["createGrammarForJsonSchema"]>[0],
            );
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    try {
      return await p;
    } catch (e) {
      throw new AppError(
        "BAD_REQUEST",
        `invalid JSON schema in "format": ${e instanceof Error ? e.message : String(e)}`,
        { param: "format", cause: e },
      );
    }
  }
}

/**
 * The texts that end a generation under `grammar`, as node-llama-cpp's own generation loop ends it: a JSON schema
 * grammar requires "\n\n\n\n" after the value and then allows only more newlines, so without this stop a schema answer
 * would go on with newlines until num_predict or the context's end. The stop text itself is not output.
 */
export function grammarStopStrings(grammar: LlamaGrammar | undefined): string[] {
  const texts: string[] = [];
  for (const trigger of grammar?.stopGenerationTriggers ?? []) {
    // A trigger is a string, a LlamaText, or tokens (which a text match cannot see).
    const parts = typeof trigger === "string" ? [trigger] : trigger instanceof LlamaText ? trigger.values : [];
    if (parts.length > 0 && parts.every((p) => typeof p === "string")) texts.push(parts.join(""));
  }
  return texts.filter((t) => t.length > 0);
}

/**
 * llama.getGrammarFor("json"), from the grammar files the package ships (llama/grammars): for a local build
 * node-llama-cpp looks for them in a llama.cpp checkout inside the package, which the cached patched build has not.
 */
async function jsonGrammar(llama: Llama): Promise<LlamaGrammar> {
  const grammar = await fs.promises.readFile(path.join(nodeLlamaCppDir(), "llama", "grammars", "json.gbnf"), "utf8");
  // The same options getGrammarFor uses for "json".
  return llama.createGrammar({
    grammar,
    stopGenerationTriggers: [LlamaText(["\n".repeat(4)])],
    trimWhitespaceSuffix: true,
  });
}
