// The playground's requests go through the gateway's app pipeline (hold while the app starts, limits, usage, the
// pod's stream) as the admin key whose session (or header) called the management route: the request is rewritten to
// the app's own path and carries that already-checked key, so the page never holds a key.
import type { IncomingMessage } from "node:http";
import { actAs } from "../2-authenticate/authenticate.ts";
import type { VerifiedKey } from "../2-authenticate/authorization.ts";

/** Headers of the console's own that the app's pods have no business seeing. */
const CONSOLE_HEADERS: ReadonlySet<string> = new Set(["cookie", "x-csrf-token"]);

/** Turns a management request into the app request `/<org>/<app><rest>` made as `key`. */
export function asAppRequest(req: IncomingMessage, org: string, app: string, rest: string, key: VerifiedKey): void {
  actAs(req, key);
  const q = (req.url ?? "").indexOf("?");
  req.url = `/${org}/${app}${rest}${q < 0 ? "" : (req.url ?? "").slice(q)}`;
  for (const h of CONSOLE_HEADERS) delete req.headers[h];
  delete req.headers.expect; // already answered by the management route
  for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2)
    if (CONSOLE_HEADERS.has(req.rawHeaders[i]!.toLowerCase()) || req.rawHeaders[i]!.toLowerCase() === "expect")
      req.rawHeaders.splice(i, 2);
}
