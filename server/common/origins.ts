// Browser origins (CORS) matched against a list of patterns: exact origins, "*" (any), or patterns with "*" wildcards
// ("https://*.example.com"). Pure. Used by `gantry serve` (server/http/cors.ts) and the gateway.

export function originMatches(origin: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    if (pattern === "*") return true;
    if (!pattern.includes("*")) return pattern === origin;
    const re = new RegExp(
      "^" +
        pattern
          .split("*")
          .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
          .join(".*") +
        "$",
    );
    return re.test(origin);
  });
}
