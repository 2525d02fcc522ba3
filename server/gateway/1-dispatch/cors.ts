// Step 1, dispatch: CORS for browser clients of the apps and the management API. Keys travel in the Authorization
// header, never in cookies, so a page of any allowed origin (config corsOrigins, "*" by default) may call the gateway
// as OpenAI's own API allows: the origin is echoed (with Vary: Origin), credentials (cookies) are not allowed. Pure.

/** Response headers a browser script may read besides the CORS-safelisted ones. */
export const EXPOSED_HEADERS = "x-request-id, retry-after, www-authenticate";

const TOKEN_LIST = /^[!#$%&'*+.^`|~\w-]+(?:[ \t]*,[ \t]*[!#$%&'*+.^`|~\w-]+)*$/;

/**
 * The answer headers of a preflight (OPTIONS with Access-Control-Request-Method): the requested headers are allowed
 * when they are a valid list (a "*" would not cover Authorization), and the answer is cached by the browser 10 min.
 */
export function preflightHeaders(requestedHeaders: string | undefined): Record<string, string> {
  const asked = requestedHeaders?.trim();
  return {
    "access-control-allow-methods": "GET, POST, DELETE, HEAD, OPTIONS",
    "access-control-allow-headers": asked && TOKEN_LIST.test(asked) ? asked : "authorization, content-type",
    "access-control-max-age": "600",
    "content-length": "0",
  };
}
