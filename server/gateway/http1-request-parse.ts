// HTTP/1.1 request heads (RFC 9112) for the gateway's own server (http1-server.ts): the request line, the header fields
// and how the body is delimited. Pure: a string in, values out. Strict where ambiguity could let a request be framed
// differently here and in a later hop (request smuggling): both Content-Length and Transfer-Encoding, conflicting
// lengths, codings other than chunked, obsolete line folding, whitespace before a colon and control characters are
// refused, never guessed at.
import type { IncomingHttpHeaders } from "node:http";

/** Largest request head accepted (request line and header fields), as node:http's default. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

/** A request the server refuses itself: 400 (malformed), 431 (head too large). */
export class RequestParseError extends Error {
  readonly status: 400 | 431;
  constructor(status: 400 | 431, message: string) {
    super(message);
    this.status = status;
  }
}

export interface RequestHead {
  method: string;
  /** The request target as sent (origin form: path and query). */
  url: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  /** Fields by lowercase name, duplicates combined as node:http does (some keep the first, Set-Cookie a list). */
  headers: IncomingHttpHeaders;
  /** Names as sent and values, alternating. */
  rawHeaders: string[];
  /** The client keeps the connection for another request (HTTP/1.1 unless `close`; HTTP/1.0 with `keep-alive`). */
  keepAlive: boolean;
  /** How the body ends: after a length (0: none) or with the chunked coding. */
  body: { kind: "length"; length: number } | { kind: "chunked" };
}

/** Fields of which a second copy is dropped (node:http's list): one value makes sense, a list would be ambiguous. */
const FIRST_ONLY = new Set([
  "age",
  "authorization",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

/** RFC 9110 token characters (method and field names). */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  TCHAR[c.charCodeAt(0)] = 1;

function isToken(s: string, from: number, to: number): boolean {
  if (to <= from) return false;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || TCHAR[c] === 0) return false;
  }
  return true;
}

/** Control characters other than HTAB, and CR or LF outside a CRLF pair. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const BAD_CHARS = /[\0-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/;

/** RFC 9110 §7.2 Host: uri-host [":" port], the host a reg-name or an IP literal; may be empty. */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[\w\-.~!$&'()*+,;=%]*)(?::\d*)?$/;

/** A decimal of 1 to 15 digits, or -1. */
function decimal(v: string): number {
  if (v.length === 0 || v.length > 15) return -1;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
  }
  return Number(v);
}

const bad = (message: string): RequestParseError => new RequestParseError(400, message);

/** The request line: method, target, minor version. */
function requestLine(line: string): { method: string; url: string; minor: 0 | 1 } {
  const sp1 = line.indexOf(" ");
  const sp2 = sp1 < 0 ? -1 : line.indexOf(" ", sp1 + 1);
  if (sp1 <= 0 || sp2 < 0) throw bad("malformed request line");
  if (!isToken(line, 0, sp1)) throw bad("malformed method");
  const url = line.slice(sp1 + 1, sp2);
  if (url === "" || (url.charCodeAt(0) !== 47 && url !== "*" && !/^https?:\/\//i.test(url))) {
    throw bad("malformed request target");
  }
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c <= 32 || c === 127) throw bad("malformed request target");
  }
  const version = line.slice(sp2 + 1);
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") throw bad("unsupported HTTP version");
  return { method: line.slice(0, sp1), url, minor: version === "HTTP/1.1" ? 1 : 0 };
}

/**
 * Parses a request head: the bytes before the blank line (without it), read as latin1. Throws RequestParseError for
 * anything malformed or ambiguous.
 */
export function parseRequestHead(head: string): RequestHead {
  if (head.length > MAX_REQUEST_HEAD_BYTES) throw new RequestParseError(431, "request head too large");
  if (BAD_CHARS.test(head)) throw bad("control character in the request head");
  let eol = head.indexOf("\r\n");
  if (eol < 0) eol = head.length;
  const { method, url, minor } = requestLine(head.slice(0, eol));
  const headers: IncomingHttpHeaders = {};
  const rawHeaders: string[] = [];
  let contentLength: string | undefined, te: string | undefined, connection: string | undefined;
  let pos = eol + 2;
  while (pos < head.length) {
    let next = head.indexOf("\r\n", pos);
    if (next < 0) next = head.length;
    const colon = head.indexOf(":", pos);
    const first = head.charCodeAt(pos);
    if (first === 32 || first === 9) throw bad("obsolete line folding in a header field");
    if (colon < 0 || colon > next || !isToken(head, pos, colon)) throw bad("malformed header field");
    const raw = head.slice(pos, colon);
    const name = raw.toLowerCase();
    let a = colon + 1,
      b = next;
    while (a < b && (head.charCodeAt(a) === 32 || head.charCodeAt(a) === 9)) a++;
    while (b > a && (head.charCodeAt(b - 1) === 32 || head.charCodeAt(b - 1) === 9)) b--;
    const value = head.slice(a, b);
    pos = next + 2;
    rawHeaders.push(raw, value);
    const have = headers[name];
    if (name === "host" && have !== undefined) throw bad("more than one Host header");
    if (name === "content-length") {
      if (contentLength !== undefined && contentLength !== value) throw bad("conflicting Content-Length");
      contentLength = value;
    } else if (name === "transfer-encoding") te = te === undefined ? value : `${te}, ${value}`;
    else if (name === "connection") connection = connection === undefined ? value : `${connection}, ${value}`;
    if (have === undefined) headers[name] = name === "set-cookie" ? [value] : value;
    else if (name === "set-cookie") (have as string[]).push(value);
    else if (name === "cookie") headers[name] = `${have as string}; ${value}`;
    else if (!FIRST_ONLY.has(name) && name !== "content-length") headers[name] = `${have as string}, ${value}`;
  }
  if (minor === 1 && headers.host === undefined) throw bad("an HTTP/1.1 request needs a Host header");
  if (headers.host !== undefined && !HOST.test(headers.host)) throw bad("invalid Host header");
  let keepAlive = minor === 1;
  if (connection !== undefined) {
    let close = false,
      keep = false;
    for (const t of connection.toLowerCase().split(",")) {
      const token = t.trim();
      if (token === "close") close = true;
      else if (token === "keep-alive") keep = true;
    }
    keepAlive = !close && (minor === 1 || keep);
  }
  let body: RequestHead["body"];
  if (te !== undefined) {
    if (contentLength !== undefined) throw bad("both Content-Length and Transfer-Encoding");
    if (minor === 0) throw bad("Transfer-Encoding in an HTTP/1.0 request");
    if (te.trim().toLowerCase() !== "chunked") throw bad(`unsupported Transfer-Encoding: ${te}`);
    body = { kind: "chunked" };
  } else if (contentLength !== undefined) {
    const length = decimal(contentLength);
    if (length < 0) throw bad(`malformed Content-Length: ${contentLength}`);
    body = { kind: "length", length };
  } else body = { kind: "length", length: 0 };
  return { method, url, minor, headers, rawHeaders, keepAlive, body };
}
