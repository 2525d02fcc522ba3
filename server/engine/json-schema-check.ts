// A structural check of a JSON schema before it becomes a grammar: node-llama-cpp silently turns unknown types into a
// "null"-only grammar, which would make a typo in a client's schema look like a model failure. Pure.

const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);

/** The first problem found in `schema` (with its JSON path), or null when it looks usable. */
export function schemaProblem(schema: unknown, at = "$"): string | null {
  if (typeof schema === "boolean") return null;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return `${at} must be an object`;
  const s = schema as Record<string, unknown>;
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    for (const t of types)
      if (typeof t !== "string" || !TYPES.has(t)) return `${at}.type: unknown type ${JSON.stringify(t)}`;
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) return `${at}.enum must be an array`;
  if (s.required !== undefined && !(Array.isArray(s.required) && s.required.every((r) => typeof r === "string")))
    return `${at}.required must be an array of strings`;
  if (s.properties !== undefined) {
    if (typeof s.properties !== "object" || s.properties === null || Array.isArray(s.properties))
      return `${at}.properties must be an object`;
    for (const [k, v] of Object.entries(s.properties)) {
      const p = schemaProblem(v, `${at}.properties.${k}`);
      if (p) return p;
    }
  }
  for (const key of ["items", "additionalProperties"] as const) {
    if (s[key] !== undefined) {
      const p = schemaProblem(s[key], `${at}.${key}`);
      if (p) return p;
    }
  }
  for (const key of ["oneOf", "anyOf", "allOf", "prefixItems"] as const) {
    if (s[key] === undefined) continue;
    if (!Array.isArray(s[key])) return `${at}.${key} must be an array`;
    for (const [i, v] of (s[key] as unknown[]).entries()) {
      const p = schemaProblem(v, `${at}.${key}[${i}]`);
      if (p) return p;
    }
  }
  return null;
}
