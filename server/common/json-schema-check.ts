// A check of a JSON schema before it becomes an output grammar (node-llama-cpp's compiler). The compiler drops what it
// cannot compile without a word: an unknown type becomes a "null"-only grammar, a `$ref` to a missing definition or an
// invalid `pattern` leaves that part unconstrained, `enum: []` allows nothing. A client would see a model that ignores
// its schema; here each such schema is an error that names the keyword and where it is. Pure; checks the nesting depth
// first (without recursion), so a hostile schema cannot overflow the stack here or in the compiler.
import { nestsDeeperThan } from "./json-depth.ts";

/** The deepest nesting of objects and arrays a JSON schema (`format`, `response_format`) may have. */
export const MAX_JSON_SCHEMA_DEPTH = 100;

const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);
/** Keywords whose value is a subschema, and those whose value is a list of subschemas. */
const SUBSCHEMA = ["items", "additionalProperties"] as const;
const SUBSCHEMA_LISTS = ["oneOf", "anyOf", "allOf", "prefixItems"] as const;
/** What node-llama-cpp's compiler resolves: a definition in the `$defs` of the schema or of an enclosing schema. */
const REF_PREFIX = "#/$defs/";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The first problem found in `schema` (with its JSON path), or null when it can be compiled as written. */
export function schemaProblem(schema: unknown): string | null {
  if (nestsDeeperThan(schema, MAX_JSON_SCHEMA_DEPTH))
    return `JSON schema nests deeper than ${MAX_JSON_SCHEMA_DEPTH} levels (the limit)`;
  return problemAt(schema, "$", new Set());
}

/** `defs`: the definition names `$ref`s may point to here (those of this schema's enclosing `$defs`). */
function problemAt(schema: unknown, at: string, defs: ReadonlySet<string>): string | null {
  if (typeof schema === "boolean") return null;
  if (!isObject(schema)) return `${at} must be an object`;
  const s = schema;
  let visible = defs;
  if (s.$defs !== undefined) {
    if (!isObject(s.$defs)) return `${at}.$defs must be an object`;
    visible = new Set([...defs, ...Object.keys(s.$defs)]);
    for (const [name, def] of Object.entries(s.$defs)) {
      const p = problemAt(def, `${at}.$defs.${name}`, visible);
      if (p) return p;
    }
  }
  if (s.$ref !== undefined) {
    if (typeof s.$ref !== "string") return `${at}.$ref must be a string`;
    if (!s.$ref.startsWith(REF_PREFIX))
      return `${at}.$ref: "${s.$ref}" is not supported (only references to the schema's own definitions, "${REF_PREFIX}<name>")`;
    if (!visible.has(s.$ref.slice(REF_PREFIX.length))) return `${at}.$ref: "${s.$ref}" points to no definition`;
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (types.length === 0) return `${at}.type is empty (no value can match)`;
    for (const t of types)
      if (typeof t !== "string" || !TYPES.has(t)) return `${at}.type: unknown type ${JSON.stringify(t)}`;
  }
  if (s.enum !== undefined) {
    if (!Array.isArray(s.enum)) return `${at}.enum must be an array`;
    if (s.enum.length === 0) return `${at}.enum is empty (no value can match)`;
  }
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== "string") return `${at}.pattern must be a string`;
    try {
      new RegExp(s.pattern); // ECMA-262, as JSON Schema's patterns are (with the web's legacy escapes)
    } catch (e) {
      return `${at}.pattern: ${(e as Error).message}`; // "Invalid regular expression: /…/: why"
    }
  }
  if (s.required !== undefined && !(Array.isArray(s.required) && s.required.every((r) => typeof r === "string")))
    return `${at}.required must be an array of strings`;
  if (s.properties !== undefined) {
    if (!isObject(s.properties)) return `${at}.properties must be an object`;
    for (const [k, v] of Object.entries(s.properties)) {
      const p = problemAt(v, `${at}.properties.${k}`, visible);
      if (p) return p;
    }
  }
  for (const key of SUBSCHEMA) {
    if (s[key] === undefined) continue;
    const p = problemAt(s[key], `${at}.${key}`, visible);
    if (p) return p;
  }
  for (const key of SUBSCHEMA_LISTS) {
    if (s[key] === undefined) continue;
    const list = s[key];
    if (!Array.isArray(list)) return `${at}.${key} must be an array`;
    if (list.length === 0 && (key === "oneOf" || key === "anyOf")) return `${at}.${key} is empty (no value can match)`;
    for (const [i, v] of list.entries()) {
      const p = problemAt(v, `${at}.${key}[${i}]`, visible);
      if (p) return p;
    }
  }
  return null;
}
