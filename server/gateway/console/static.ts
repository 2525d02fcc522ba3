// The console's pages and assets, built by `npm run build` into dist/console (server/setup/console-build.ts):
// read once at start, served from memory with the encoding the browser prefers among the precompressed ones (brotli,
// gzip), hashed assets cached for a year (immutable), the page itself revalidated (ETag), under a strict
// Content-Security-Policy (own origin only, no inline script, no framing). Any path under /_gantry/console/ that is
// not an asset is the page (the console routes in the browser).
import fs from "node:fs";
import path from "node:path";
import Negotiator from "negotiator";
import { AppError } from "../../common/errors.ts";
import type { IncomingMessage, ServerResponse } from "node:http";

export const CONSOLE_PREFIX = "/_gantry/console";

export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

interface Asset {
  type: string;
  etag: string;
  immutable: boolean;
  bodies: Map<string, Buffer>;
}

/** The console's built files by URL path below /_gantry/console/ ("" is the page). */
export function loadAssets(dir: string): Map<string, Asset> | undefined {
  if (!fs.existsSync(path.join(dir, "index.html"))) return undefined;
  const out = new Map<string, Asset>();
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as {
    files: Array<{ path: string; etag: string; hashed: boolean; encodings: string[] }>;
  };
  for (const f of manifest.files) {
    const bodies = new Map<string, Buffer>([["identity", fs.readFileSync(path.join(dir, f.path))]]);
    for (const enc of f.encodings)
      bodies.set(enc, fs.readFileSync(path.join(dir, `${f.path}.${enc === "br" ? "br" : "gz"}`)));
    out.set(f.path === "index.html" ? "" : f.path, {
      type: TYPES[path.extname(f.path)] ?? "application/octet-stream",
      etag: f.etag,
      immutable: f.hashed,
      bodies,
    });
  }
  return out;
}

/** The encoding to send among `available` (brotli first when the browser takes several equally). */
function pickEncoding(accept: string | undefined, available: string[]): string | undefined {
  // negotiator 1.x takes the preference order as a second argument (its @types are of 0.6).
  const n = new Negotiator({ headers: { "accept-encoding": accept ?? "" } }) as unknown as {
    encoding(available: string[], o: { preferred: string[] }): string | undefined;
  };
  return n.encoding(available, { preferred: ["br", "gzip", "identity"] });
}

export class StaticConsole {
  private readonly assets: Map<string, Asset> | undefined;

  constructor(dir: string) {
    this.assets = loadAssets(dir);
  }

  get built(): boolean {
    return this.assets !== undefined;
  }

  serve(req: IncomingMessage, res: ServerResponse, urlPath: string, requestId: string): void {
    const method = req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD")
      throw new AppError("METHOD_NOT_ALLOWED", `method ${method} not allowed on ${urlPath}`, {
        headers: { allow: "GET, HEAD" },
      });
    if (urlPath === CONSOLE_PREFIX) {
      res.writeHead(308, { location: `${CONSOLE_PREFIX}/`, "content-length": 0, "x-request-id": requestId });
      res.end();
      return;
    }
    if (!this.assets)
      throw new AppError(
        "NOT_FOUND",
        "the console is not built into this installation (npm run build builds it into dist/console)",
      );
    const rel = urlPath.slice(CONSOLE_PREFIX.length + 1);
    const isAsset = rel.startsWith("assets/") || /\.[a-z0-9]+$/i.test(rel);
    const asset = this.assets.get(isAsset ? rel : "");
    if (!asset) throw new AppError("NOT_FOUND", `${urlPath} is not a file of the console`);
    const headers: Record<string, string | number> = {
      ...SECURITY_HEADERS,
      "content-type": asset.type,
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      etag: asset.etag,
      vary: "Accept-Encoding",
      "x-request-id": requestId,
    };
    if (req.headers["if-none-match"] === asset.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const encoding = pickEncoding(req.headers["accept-encoding"], [...asset.bodies.keys()]);
    const body = asset.bodies.get(encoding ?? "identity") ?? asset.bodies.get("identity")!;
    if (encoding && encoding !== "identity") headers["content-encoding"] = encoding;
    headers["content-length"] = body.length;
    res.writeHead(200, headers);
    res.end(method === "HEAD" ? undefined : body);
  }
}
