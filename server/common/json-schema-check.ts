// A check of a JSON schema before it becomes an output grammar (node-llama-cpp's compiler). The compiler drops what it
// cannot compile without a word: an unknown type becomes a "null"-only grammar, a `$ref` to a missing definition or an
// invalid `pattern` leaves that part unconstrained, `enum: []` allows nothing. A client would see a model that ignores
// its schema; here each such schema is an error that names the keyword and where it is. Pure; checks the nesting depth
// first (without recursion), so a hostile schema cannot overflow the stack here or in the compiler. Draft-07's root
// `definitions` (pydantic v1, zod-to-json-schema, older tools; Ollama's compiler resolves them) are read as `$defs`.
import { nestsDeeperThan } from "./json-depth.ts";

/** The deepest nesting of objects and arrays a JSON schema (`format`, `response_format`) may have. */
export const MAX_JSON_SCHEMA_DEPTH = 100;

const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);
/** Keywords whose value is a subschema, and those whose value is a list of subschemas. */
const SUBSCHEMA = ["items", "additionalProperties"] as const;
const SUBSCHEMA_LISTS = ["oneOf", "anyOf", "allOf", "prefixItems"] as const;
/** What node-llama-cpp's compiler resolves: a definition in the `$defs` of the schema or of an enclosing schema. */
const REF_PREFIX = "#/$defs/";
/** Draft-07's spelling of a reference to a root definition. */
const DEFINITIONS_PREFIX = "#/definitions/";
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAPS = ["$defs", "definitions", "properties"] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The first problem found in `schema` (with its JSON path), or null when it can be compiled as written. */
export function schemaProblem(schema: unknown): string | null {
  if (nestsDeeperThan(schema, MAX_JSON_SCHEMA_DEPTH))
    return `JSON schema nests deeper than ${MAX_JSON_SCHEMA_DEPTH} levels (the limit)`;
  return problemAt(withDefinitionsAsDefs(schema), "$", new Set());
}

/**
 * `schema` with its root `definitions` moved into its root `$defs` and each `"$ref": "#/definitions/<name>"` to one of
 * them written `"#/$defs/<name>"`, the one form the compiler resolves (a name `$defs` already has stays where it is,
 * and a reference to it is reported). Recurses: only for a schema whose depth schemaProblem accepted. Copies what it
 * changes.
 */
export function withDefinitionsAsDefs(schema: unknown): unknown {
  if (!isObject(schema) || !isObject(schema.definitions)) return schema;
  const defs = isObject(schema.$defs) ? schema.$defs : {};
  const moved = new Set(Object.keys(schema.definitions).filter((name) => !Object.hasOwn(defs, name)));
  if (moved.size === 0) return schema;
  const entries = Object.entries(schema.definitions);
  const kept = entries.filter(([name]) => !moved.has(name));
  const { definitions: _, ...rest } = schema;
  const root = {
    ...rest,
    $defs: { ...defs, ...Object.fromEntries(entries.filter(([name]) => moved.has(name))) },
    ...(kept.length ? { definitions: Object.fromEntries(kept) } : {}),
  };
  return refsRewritten(root, moved);
}

/** `schema` with its `#/definitions/<name>` references to `names` written `#/$defs/<name>`, in every subschema. */
function refsRewritten(schema: unknown, names: ReadonlySet<string>): unknown {
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = { ...schema };
  const ref = out.$ref;
  if (typeof ref === "string" && ref.startsWith(DEFINITIONS_PREFIX) && names.has(ref.slice(DEFINITIONS_PREFIX.length)))
    out.$ref = REF_PREFIX + ref.slice(DEFINITIONS_PREFIX.length);
  for (const key of SCHEMA_MAPS)
    if (isObject(out[key]))
      out[key] = Object.fromEntries(Object.entries(out[key]).map(([k, v]) => [k, refsRewritten(v, names)]));
  for (const key of SUBSCHEMA) if (out[key] !== undefined) out[key] = refsRewritten(out[key], names);
  for (const key of SUBSCHEMA_LISTS)
    if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map((v) => refsRewritten(v, names));
  return out;
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
    // withDefinitionsAsDefs rewrote the references to the root `definitions` there are.
    if (s.$ref.startsWith(DEFINITIONS_PREFIX)) return `${at}.$ref: "${s.$ref}" points to no definition`;
    if (!s.$ref.startsWith(REF_PREFIX))
      return `${at}.$ref: "${s.$ref}" is not supported (only references to the schema's own definitions, "${REF_PREFIX}<name>" or "${DEFINITIONS_PREFIX}<name>")`;
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
