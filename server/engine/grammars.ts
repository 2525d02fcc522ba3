// JSON output grammars, cached per schema text (building a grammar from a schema is not free).
import type { Llama, LlamaGrammar } from "node-llama-cpp";
import { AppError } from "../common/errors.ts";
import { schemaProblem } from "./json-schema-check.ts";
import type { OutputFormat } from "./types.ts";

export class GrammarCache {
  private readonly llama: Llama;
  private readonly cache = new Map<string, Promise<LlamaGrammar>>();

  constructor(llama: Llama) {
    this.llama = llama;
  }

  /** The grammar for `format`; an invalid JSON schema is a BAD_REQUEST. */
  async get(format: OutputFormat | undefined): Promise<LlamaGrammar | undefined> {
    if (format === undefined) return undefined;
    if (format !== "json") {
      const problem = schemaProblem(format.schema);
      if (problem) throw new AppError("BAD_REQUEST", `invalid JSON schema in "format": ${problem}`, { param: "format" });
    }
    const key = format === "json" ? "json" : JSON.stringify(format.schema);
    let p = this.cache.get(key);
    if (!p) {
      p = format === "json"
        ? this.llama.getGrammarFor("json")
        : this.llama.createGrammarForJsonSchema(format.schema as Parameters<Llama["createGrammarForJsonSchema"]>[0]);
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    try {
      return await p;
    } catch (e) {
      throw new AppError("BAD_REQUEST", `invalid JSON schema in "format": ${e instanceof Error ? e.message : String(e)}`, { param: "format", cause: e });
    }
  }
}
