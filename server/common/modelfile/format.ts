// Prints a Modelfile back to source. The output always parses back to the same commands.
import { PARAMETER_TYPES, isParameterName } from "./parameters.ts";
import type { Command, Modelfile } from "./types.ts";

/** Text that reads back unchanged when written bare (unquoted) after a keyword. */
function isBareSafe(s: string): boolean {
  return s !== "" && s === s.trim() && !/[\n\r]/.test(s) && !s.startsWith('"');
}

/** Multi-line text that reads back unchanged between triple quotes (which have no escapes). */
function isTripleSafe(s: string): boolean {
  return !s.includes('"""') && !s.endsWith('"') && !s.includes("\r");
}

function doubleQuote(s: string): string {
  return `"${s.replace(/[\\"\n\r\t]/g, (c) => ({ "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t" })[c] ?? c)}"`;
}

/** Quotes a value only when it needs it: triple quotes for multi-line text, double quotes with escapes otherwise. */
export function quoteValue(s: string): string {
  if (isBareSafe(s)) return s;
  if (s.includes("\n") && isTripleSafe(s)) return `"""${s}"""`;
  return doubleQuote(s);
}

export function formatCommand(c: Command): string {
  switch (c.name) {
    case "parameter": {
      // String parameters (stop sequences) are always quoted, as `ollama show --modelfile` prints them.
      const isString = isParameterName(c.key) && PARAMETER_TYPES[c.key] === "string";
      return `PARAMETER ${c.key} ${isString ? doubleQuote(c.args) : quoteValue(c.args)}`;
    }
    case "message":
      return `MESSAGE ${c.role} ${quoteValue(c.content)}`;
    default:
      return `${c.name.toUpperCase()} ${quoteValue(c.args)}`;
  }
}

export function formatModelfile(mf: Modelfile): string {
  return mf.commands.map((c) => `${formatCommand(c)}\n`).join("");
}
