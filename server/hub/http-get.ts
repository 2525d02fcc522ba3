// A GET over node:http/https that follows redirects, for file downloads. Node streams deliver 64 KiB chunks with far
// less per-chunk overhead than fetch's web streams, which is most of a download's CPU time on a fast link.
// Authorization is dropped when a redirect leaves the origin (the hub redirects LFS files to a signed CDN URL).
import http from "node:http";
import https from "node:https";

export interface HttpGetResponse {
  status: number;
  header(name: string): string | undefined;
  body: http.IncomingMessage;
}

const MAX_REDIRECTS = 10;

export function httpGet(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<HttpGetResponse> {
  return follow(new URL(url), headers, signal, 0);
}

async function follow(
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
  hops: number,
): Promise<HttpGetResponse> {
  const res = await request(url, headers, signal);
  const location = res.headers.location;
  if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location) {
    res.resume();
    if (hops >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
    const next = new URL(location, url);
    const nextHeaders = { ...headers };
    if (next.origin !== url.origin) delete nextHeaders.Authorization;
    return follow(next, nextHeaders, signal, hops + 1);
  }
  return {
    status: res.statusCode ?? 0,
    header: (name) => {
      const v = res.headers[name.toLowerCase()];
      return Array.isArray(v) ? v.join(", ") : v;
    },
    body: res,
  };
}

function request(url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<http.IncomingMessage> {
  const lib = url.protocol === "https:" ? https : url.protocol === "http:" ? http : null;
  if (!lib) return Promise.reject(new Error(`unsupported URL scheme ${url.protocol}`));
  return new Promise((resolve, reject) => {
    const req = lib.get(url, { headers, signal }, resolve);
    req.once("error", reject);
  });
}
