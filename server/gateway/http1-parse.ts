// HTTP/1.1 response framing (RFC 9112) for the gateway's upstream client: the response head (status line and header
// fields), how the body is delimited, and a chunked-coding decoder. Pure: bytes in, values out; nothing here touches
// a socket. The pods are `gantry serve` (node:http), but anything malformed is refused with a clear error rather than
// guessed at, since a mis-framed answer would mix two requests' bytes on a kept-alive connection.
import type { IncomingHttpHeaders } from "node:http";

/** A response the client cannot frame: the connection is closed, the exchange fails. */
export class HttpParseError extends Error {
  readonly code = "UPSTREAM_BAD_RESPONSE";
}

/** Largest response head accepted (status line and header fields). */
export const MAX_HEAD_BYTES = 64 * 1024;

export interface ResponseHead {
  status: number;
  /**
   * The header fields by lowercase name, less the hop-by-hop ones (Connection and the fields it names, Keep-Alive,
   * Transfer-Encoding, TE, Trailer, Upgrade, Proxy-*): those describe this connection, which the client consumes.
   */
  headers: IncomingHttpHeaders;
  /** The connection may carry another request after this answer. */
  keepAlive: boolean;
  /** The server's idle timeout from `Keep-Alive: timeout=N`, in ms (undefined when not given). */
  keepAliveMs: number | undefined;
  /** How the body ends: a length (0: no body), the chunked coding, or the close of the connection. */
  body: { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** `HTTP/1.x NNN[ reason]`: the minor version (0 or 1) and the status, or undefined. Character checks, no regex. */
function statusLine(line: string): { minor: 0 | 1; status: number } | undefined {
  if (line.length < 12 || !line.startsWith("HTTP/1.") || line.charCodeAt(8) !== 32) return undefined;
  const minor = line.charCodeAt(7) - 48;
  const a = line.charCodeAt(9),
    b = line.charCodeAt(10),
    c = line.charCodeAt(11);
  if ((minor !== 0 && minor !== 1) || a < 49 || a > 57 || !isDigit(b) || !isDigit(c)) return undefined;
  if (line.length > 12 && line.charCodeAt(12) !== 32) return undefined;
  return { minor, status: (a - 48) * 100 + (b - 48) * 10 + (c - 48) };
}

/** A decimal of 1 to 15 digits, or -1. */
function decimal(v: string): number {
  if (v.length === 0 || v.length > 15) return -1;
  for (let i = 0; i < v.length; i++) if (!isDigit(v.charCodeAt(i))) return -1;
  return Number(v);
}

/**
 * Parses a response head (the bytes before the blank line, without it). `method` is the request's: the answer to a
 * HEAD has no body whatever its fields say. One pass over the lines, no regular expression per field: this runs once
 * per proxied request.
 */
export function parseResponseHead(head: string, method: string): ResponseHead {
  let eol = head.indexOf("\r\n");
  if (eol < 0) eol = head.length;
  const m = statusLine(head.slice(0, eol));
  if (!m) throw new HttpParseError(`malformed status line: ${JSON.stringify(head.slice(0, Math.min(eol, 80)))}`);
  const status = m.status;
  const headers: IncomingHttpHeaders = {};
  let contentLength: string | undefined, te: string | undefined, connection: string | undefined;
  let keepAliveField: string | undefined;
  let named: string[] | undefined; // fields Connection names as hop-by-hop
  let pos = eol + 2;
  while (pos < head.length) {
    let next = head.indexOf("\r\n", pos);
    if (next < 0) next = head.length;
    const colon = head.indexOf(":", pos);
    if (colon <= pos || colon > next) {
      throw new HttpParseError(`malformed header line: ${JSON.stringify(head.slice(pos, Math.min(next, pos + 80)))}`);
    }
    const first = head.charCodeAt(pos);
    if (first === 32 || first === 9) throw new HttpParseError("obsolete line folding in a header field");
    const name = head.slice(pos, colon).toLowerCase();
    const value = head.slice(colon + 1, next).trim();
    pos = next + 2;
    switch (name) {
      case "content-length":
        if (contentLength !== undefined && contentLength !== value)
          throw new HttpParseError("conflicting Content-Length");
        contentLength = value;
        break;
      case "transfer-encoding":
        te = te === undefined ? value : `${te}, ${value}`;
        continue;
      case "connection":
        connection = connection === undefined ? value : `${connection}, ${value}`;
        continue;
      case "keep-alive":
        keepAliveField = value;
        continue;
      case "te":
      case "trailer":
      case "upgrade":
      case "proxy-connection":
      case "proxy-authenticate":
      case "proxy-authorization":
        continue;
      case "set-cookie": {
        const have = headers[name];
        headers[name] = have ? [...have, value] : [value];
        continue;
      }
    }
    const have = headers[name];
    headers[name] = have === undefined ? value : `${have as string}, ${value}`;
  }
  let keepAlive = true;
  if (connection === undefined) keepAlive = m.minor === 1;
  else if (connection !== "keep-alive") {
    // (plain "keep-alive", what node:http sends, needs no look inside)
    const tokens = connection.toLowerCase().split(",");
    for (let t of tokens) {
      t = t.trim();
      if (t === "close") keepAlive = false;
      else if (t !== "keep-alive" && t !== "" && t in headers) (named ??= []).push(t);
    }
    if (named) for (const n of named) delete headers[n];
    if (m.minor === 0) keepAlive = keepAlive && tokens.some((t) => t.trim() === "keep-alive");
  }
  let keepAliveMs: number | undefined;
  if (keepAliveField !== undefined) {
    const lower = keepAliveField.toLowerCase();
    const at = lower.indexOf("timeout=");
    if (at >= 0) {
      let end = at + 8;
      while (end < lower.length && isDigit(lower.charCodeAt(end))) end++;
      const n = decimal(lower.slice(at + 8, end));
      if (n >= 0) keepAliveMs = n * 1000;
    }
  }
  let body: ResponseHead["body"];
  if (method === "HEAD" || status < 200 || status === 204 || status === 304) body = { kind: "length", length: 0 };
  else if (te !== undefined) {
    // A length next to a transfer coding is ignored, and the connection is not reused (RFC 9112 §6.3).
    if (contentLength !== undefined) {
      keepAlive = false;
      delete headers["content-length"];
    }
    if (/(?:^|,)\s*chunked\s*$/i.test(te)) body = { kind: "chunked" };
    else {
      body = { kind: "close" };
      keepAlive = false;
    }
  } else if (contentLength !== undefined) {
    const length = decimal(contentLength);
    if (length < 0) throw new HttpParseError(`malformed Content-Length: ${contentLength}`);
    body = { kind: "length", length };
  } else {
    body = { kind: "close" };
    keepAlive = false;
  }
  return { status, headers, keepAlive, keepAliveMs, body };
}

/**
 * Decodes the chunked transfer coding as bytes arrive: `push` returns the data of the chunks complete or partial in
 * this piece (slices of it, no copies), and `done` turns true after the last chunk and its trailer section. Bytes
 * after the end are left alone: `rest` says where they start in the last piece.
 */
export class ChunkedDecoder {
  private state: "size" | "data" | "data-end" | "trailer" | "done" = "size";
  /** The size line (or trailer line) read so far. */
  private line = "";
  /** Data bytes left in the current chunk; CR/LF bytes left after it. */
  private left = 0;
  /** Offset in the last piece where the bytes after the coding start (when done). */
  rest = 0;

  get done(): boolean {
    return this.state === "done";
  }

  push(piece: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let i = 0;
    while (i < piece.length && this.state !== "done") {
      if (this.state === "data") {
        const n = Math.min(this.left, piece.length - i);
        out.push(piece.subarray(i, i + n));
        i += n;
        this.left -= n;
        if (this.left === 0) {
          this.state = "data-end";
          this.left = 2;
        }
        continue;
      }
      if (this.state === "data-end") {
        const expect = this.left === 2 ? 0x0d : 0x0a;
        if (piece[i] !== expect) throw new HttpParseError("chunk data not followed by CRLF");
        i++;
        if (--this.left === 0) this.state = "size";
        continue;
      }
      // size or trailer: one line up to LF
      const lf = piece.indexOf(0x0a, i);
      const end = lf < 0 ? piece.length : lf;
      this.line += piece.toString("latin1", i, end);
      if (this.line.length > 8192) throw new HttpParseError("chunk size or trailer line too long");
      i = end;
      if (lf < 0) break;
      i++; // the LF
      if (!this.line.endsWith("\r")) throw new HttpParseError("chunk line not ended by CRLF");
      const line = this.line.slice(0, -1);
      this.line = "";
      if (this.state === "trailer") {
        if (line === "") this.state = "done";
        continue;
      }
      const semi = line.indexOf(";");
      const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
      if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new HttpParseError(`malformed chunk size: ${JSON.stringify(hex)}`);
      const size = parseInt(hex, 16);
      if (size === 0) this.state = "trailer";
      else {
        this.state = "data";
        this.left = size;
      }
    }
    this.rest = i;
    return out;
  }
}
