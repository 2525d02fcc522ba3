// A raw HTTP/1.1 client for conformance tests of servers: exact bytes out over a TCP connection, answers parsed by the
// framing rules of RFC 9112 section 6 (no body after HEAD, 1xx, 204, 304; chunked; Content-Length; close-delimited),
// refusing what a strict client would refuse (a bad status line or field line, both Transfer-Encoding and a length).
import assert from "node:assert/strict";
import net from "node:net";

/** The bound on any wait: only a hang reaches it, never a slow machine. */
export const PATIENCE_MS = 30_000;

/** `p`, or an error naming `what` once PATIENCE_MS passed. */
export async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${PATIENCE_MS} ms`)), PATIENCE_MS);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Answer {
  status: number;
  /** Header fields as received: [name, value]. */
  fields: Array<[string, string]>;
  body: Buffer;
  framing: "none" | "length" | "chunked" | "close";
  /** The value of a field by its name in any case (repeated fields joined by ", "). */
  header(name: string): string | undefined;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** One answer from `buf` at `at`, or undefined while incomplete. `eof`: the server closed the connection. */
export function parseAnswer(
  buf: Buffer,
  at: number,
  eof: boolean,
  toHead: boolean,
): { answer: Answer; end: number } | undefined {
  const incomplete = () => {
    if (eof) throw new Error(`the connection closed inside an answer: ${JSON.stringify(latin1(buf.subarray(at)))}`);
    return undefined;
  };
  const headEnd = buf.indexOf("\r\n\r\n", at);
  if (headEnd < 0) return incomplete();
  const [statusLine = "", ...lines] = latin1(buf.subarray(at, headEnd)).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: [^\r\n\0]*)?$/.exec(statusLine);
  if (!m) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
  const fields = lines.map((line): [string, string] => {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon);
    if (colon < 0 || !TOKEN.test(name) || /[\r\n\0]/.test(line)) throw new Error(`a bad field line: ${line}`);
    return [name, line.slice(colon + 1).trim()];
  });
  const header = (name: string) => {
    const values = fields.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
    return values.length ? values.join(", ") : undefined;
  };
  const status = Number(m[1]);
  const answer = (body: Buffer, framing: Answer["framing"], end: number) => ({
    answer: { status, fields, body, framing, header },
    end,
  });
  let p = headEnd + 4;
  if (toHead || status < 200 || status === 204 || status === 304) return answer(Buffer.alloc(0), "none", p);
  const te = header("transfer-encoding"),
    cl = header("content-length");
  if (te !== undefined) {
    assert.equal(cl, undefined, "an answer with both Transfer-Encoding and Content-Length");
    assert.match(te, /(^|,)\s*chunked$/i, "chunked is the final transfer coding of a delimited answer");
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf("\r\n", p);
      if (lineEnd < 0) return incomplete();
      const size = latin1(buf.subarray(p, lineEnd)).split(";")[0]!.trim();
      assert.match(size, /^[0-9a-fA-F]+$/, "a chunk size");
      p = lineEnd + 2;
      if (Number.parseInt(size, 16) === 0) break;
      const dataEnd = p + Number.parseInt(size, 16);
      if (buf.length < dataEnd + 2) return incomplete();
      parts.push(buf.subarray(p, dataEnd));
      assert.equal(latin1(buf.subarray(dataEnd, dataEnd + 2)), "\r\n", "CRLF after a chunk's data");
      p = dataEnd + 2;
    }
    for (;;) {
      const lineEnd = buf.indexOf("\r\n", p);
      if (lineEnd < 0) return incomplete();
      const trailer = lineEnd === p;
      p = lineEnd + 2;
      if (trailer) return answer(Buffer.concat(parts), "chunked", p);
    }
  }
  if (cl !== undefined) {
    assert.match(cl, /^\d+$/, "a Content-Length");
    const end = p + Number(cl);
    if (buf.length < end) return incomplete();
    return answer(buf.subarray(p, end), "length", end);
  }
  if (!eof) return undefined;
  return answer(buf.subarray(p), "close", buf.length);
}

const latin1 = (b: Buffer) => b.toString("latin1");

/** A raw connection to a server. */
export class Conn {
  readonly closed: Promise<void>;
  private data = Buffer.alloc(64 * 1024);
  private length = 0;
  private at = 0;
  private eof = false;
  private wake = Promise.withResolvers<void>();

  readonly socket: net.Socket;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (d: Buffer) => {
      if (this.length + d.length > this.data.length) {
        const bigger = Buffer.alloc(Math.max(this.data.length * 2, this.length + d.length));
        this.data.copy(bigger, 0, 0, this.length);
        this.data = bigger;
      }
      d.copy(this.data, this.length);
      this.length += d.length;
      this.changed();
    });
    socket.on("end", () => {
      this.eof = true;
      this.changed();
    });
    socket.on("error", () => undefined);
    this.closed = new Promise((r) =>
      socket.once("close", () => {
        this.eof = true;
        this.changed();
        r();
      }),
    );
  }

  /** A connection to 127.0.0.1:port, from a loopback address of its own when given (127.0.0.0/8). */
  static async open(port: number, localAddress?: string): Promise<Conn> {
    const socket = net.connect({ port, host: "127.0.0.1", ...(localAddress ? { localAddress } : {}) });
    socket.setNoDelay(true);
    await within(new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject)), "connection");
    return new Conn(socket);
  }

  private changed(): void {
    this.wake.resolve();
    this.wake = Promise.withResolvers<void>();
  }

  private get received(): Buffer {
    return this.data.subarray(0, this.length);
  }

  /** Everything received on the connection. */
  get text(): string {
    return latin1(this.received);
  }

  /** Whether the server closed its side. */
  get ended(): boolean {
    return this.eof;
  }

  send(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (e) => (e ? reject(e) : resolve())));
  }

  /** Sends `bytes` `size` bytes at a time, each piece written before the next is given to the socket. */
  async sendInPieces(bytes: string | Buffer, size: number): Promise<void> {
    const b = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
    for (let i = 0; i < b.length; i += size) {
      await this.send(b.subarray(i, i + size));
      await new Promise((r) => setImmediate(r));
    }
  }

  /** The next answer on the connection (1xx answers included); throws if the connection closes before it is whole. */
  async answer(opts: { toHead?: boolean } = {}): Promise<Answer> {
    for (;;) {
      const got = parseAnswer(this.received, this.at, this.eof, opts.toHead ?? false);
      if (got) {
        this.at = got.end;
        return got.answer;
      }
      await within(this.wake.promise, "answer");
    }
  }

  /** The bytes after the last answer read, once `until` holds for them. */
  async bytesAfterAnswers(until: (text: string) => boolean = () => true): Promise<string> {
    while (!until(latin1(this.received.subarray(this.at)))) {
      if (this.eof) throw new Error(`closed; received ${JSON.stringify(latin1(this.received.subarray(this.at)))}`);
      await within(this.wake.promise, "bytes");
    }
    return latin1(this.received.subarray(this.at));
  }

  /** Waits for the server to close the connection; returns what it sent after the last answer read. */
  async closedByServer(): Promise<string> {
    await within(this.closed, "close of the connection by the server");
    return latin1(this.received.subarray(this.at));
  }
}

/** Request builders. */
export const get = (target: string, headers: string[] = [], version = "1.1") =>
  `GET ${target} HTTP/${version}\r\nHost: test\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n`;
export const post = (target: string, body: string, headers: string[] = []) =>
  `POST ${target} HTTP/1.1\r\nHost: test\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
  `${headers.map((h) => `${h}\r\n`).join("")}\r\n${body}`;
export const chunked = (target: string, chunks: string[], headers: string[] = []) =>
  `POST ${target} HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n` +
  chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join("") +
  "0\r\n\r\n";
