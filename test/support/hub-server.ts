// A local Hugging Face-style hub for tests: a real HTTP server on 127.0.0.1 (ephemeral port) serving registered repos
// in the hub's URL layout —
//   GET  /api/models/<org>/<repo>/tree/<rev>?recursive=true   file list with size and lfs.oid (sha256)
//   GET  /api/models/<org>/<repo>                              {id, siblings: [{rfilename}]}
//   GET|HEAD /<org>/<repo>/resolve/<rev>/<path>                the file; LFS files (*.gguf) redirect to /cdn/… as the
//                                                              real hub does, with X-Linked-Etag / X-Linked-Size
// — with Range support, an optional bearer token per repo (401 without), and per-file faults: cut the connection or
// stall after N bytes of a response (for the next `times` responses), serve corrupt bytes, or cap the speed of each
// connection. Every request is logged
// with its Range header, status and body bytes actually sent, so tests can assert what went over the wire.
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface HubFault {
  /** Close the connection after this many body bytes of a response. */
  cutAfterBytes?: number;
  /** Stop sending (keep the connection open) after this many body bytes of a response. */
  stallAfterBytes?: number;
  /** Serve the file with one byte flipped (in every response, for as long as the fault is set). */
  corrupt?: boolean;
  /** How many responses the cut/stall applies to (default 1; Infinity = every response). */
  times?: number;
  /** Answer range requests with the whole file (200), as servers without range support do; persists. */
  ignoreRange?: boolean;
  /** Cap each response at this many bytes per second (as CDNs cap single connections); persists like `corrupt`. */
  bytesPerSecond?: number;
}

export interface HubRepoSpec {
  org: string;
  repo: string;
  /** Repo path → local file path or content. */
  files: Record<string, string | Buffer>;
  /** When set, requests must carry `Authorization: Bearer <token>`. */
  token?: string;
}

export interface HubRequestLog {
  method: string;
  url: string;
  /** Repo file path, for file downloads. */
  file?: string;
  range?: string;
  status: number;
  /** Body bytes written to the socket. */
  bytes: number;
  authorization?: string;
}

interface HubFileEntry {
  path: string;
  size: number;
  sha256: string;
  source: string | Buffer;
  lfs: boolean;
}

interface Repo {
  spec: HubRepoSpec;
  files: Map<string, HubFileEntry>;
}

const hashCache = new Map<string, Promise<string>>();

async function sha256Of(source: string | Buffer): Promise<string> {
  if (Buffer.isBuffer(source)) return createHash("sha256").update(source).digest("hex");
  const st = fs.statSync(source);
  const key = `${source}\0${st.size}\0${st.mtimeMs}`;
  let p = hashCache.get(key);
  if (!p) {
    p = (async () => {
      const h = createHash("sha256");
      for await (const chunk of fs.createReadStream(source, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
      return h.digest("hex");
    })();
    hashCache.set(key, p);
  }
  return p;
}

const sizeOf = (source: string | Buffer) => (Buffer.isBuffer(source) ? source.length : fs.statSync(source).size);

/** Parses one "bytes=a-b" / "bytes=a-" range; null when absent, "invalid" when unsatisfiable. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | "invalid" {
  if (!header) return null;
  const m = /^bytes=(\d+)-(\d*)$/.exec(header.trim());
  if (!m) return "invalid";
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "invalid";
  return { start, end };
}

export class HubServer {
  readonly url: string;
  readonly port: number;
  readonly requests: HubRequestLog[] = [];
  private readonly server: http.Server;
  private readonly repos = new Map<string, Repo>();
  private readonly faults = new Map<string, HubFault>();
  private readonly sockets = new Set<Socket>();

  constructor(server: http.Server) {
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    server.on("request", (req, res) => void this.handle(req, res));
  }

  /** Adds (or replaces) a repo. Files ending in .gguf or larger than 10 MB are LFS files with a sha256 oid. */
  async register(spec: HubRepoSpec): Promise<void> {
    const files = new Map<string, HubFileEntry>();
    for (const [p, source] of Object.entries(spec.files)) {
      const size = sizeOf(source);
      files.set(p, {
        path: p,
        size,
        sha256: await sha256Of(source),
        source,
        lfs: p.endsWith(".gguf") || size > 10_000_000,
      });
    }
    this.repos.set(`${spec.org}/${spec.repo}`, { spec, files });
  }

  /** The sha256 (hex) the hub reports for a file. */
  sha256(org: string, repo: string, file: string): string {
    const f = this.repos.get(`${org}/${repo}`)?.files.get(file);
    if (!f) throw new Error(`no file ${org}/${repo}/${file}`);
    return f.sha256;
  }

  /** Sets (or with null clears) the fault of a file. */
  fault(org: string, repo: string, file: string, fault: HubFault | null): void {
    const key = `${org}/${repo}/${file}`;
    if (fault) this.faults.set(key, { times: 1, ...fault });
    else this.faults.delete(key);
  }

  /** Logged downloads (GET responses with a body) of one repo file. */
  downloads(file: string): HubRequestLog[] {
    return this.requests.filter((r) => r.file === file && r.method === "GET" && r.status !== 302);
  }

  /** Body bytes sent for one repo file, over all requests. */
  bytesServed(file: string): number {
    return this.downloads(file).reduce((a, r) => a + r.bytes, 0);
  }

  resetLog(): void {
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://hub");
    const log: HubRequestLog = { method: req.method ?? "GET", url: url.pathname + url.search, status: 0, bytes: 0 };
    if (req.headers.range) log.range = req.headers.range;
    if (req.headers.authorization) log.authorization = req.headers.authorization;
    this.requests.push(log);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      log.status = status;
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    };
    try {
      const segs = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
      if (segs[0] === "cdn")
        return await this.serveFile(req, res, log, segs[1]!, segs[2]!, segs.slice(3).join("/"), false);
      if (segs[0] === "api" && segs[1] === "models" && segs.length >= 4) {
        const repo = this.authorized(req, segs[2]!, segs[3]!, send);
        if (!repo) return;
        if (segs.length === 4) {
          return send(200, {
            id: `${segs[2]}/${segs[3]}`,
            siblings: [...repo.files.keys()].map((rfilename) => ({ rfilename })),
          });
        }
        if (segs[4] === "tree" && segs[5] === "main")
          return send(200, this.tree(repo, url.searchParams.get("recursive") === "true"));
        if (segs[4] === "tree") return send(404, { error: `Invalid rev id: ${segs[5]}` });
      }
      if (segs.length >= 5 && segs[2] === "resolve") {
        if (segs[3] !== "main")
          return send(404, { error: "Revision Not Found" }, { "X-Error-Code": "RevisionNotFound" });
        return await this.serveFile(req, res, log, segs[0]!, segs[1]!, segs.slice(4).join("/"), true);
      }
      send(404, { error: "Not Found" });
    } catch (e) {
      if (!res.headersSent) send(500, { error: String(e) });
      else res.destroy();
    }
  }

  private authorized(
    req: http.IncomingMessage,
    org: string,
    repoName: string,
    send: (s: number, b: unknown, h?: Record<string, string>) => void,
  ): Repo | null {
    const repo = this.repos.get(`${org}/${repoName}`);
    if (!repo) {
      send(404, { error: "Repository not found" }, { "X-Error-Code": "RepoNotFound" });
      return null;
    }
    if (repo.spec.token && req.headers.authorization !== `Bearer ${repo.spec.token}`) {
      send(401, { error: "Invalid credentials in Authorization header" }, { "X-Error-Code": "GatedRepo" });
      return null;
    }
    return repo;
  }

  private tree(repo: Repo, recursive: boolean): unknown[] {
    const entries: unknown[] = [];
    const dirs = new Set<string>();
    for (const f of repo.files.values()) {
      const parts = f.path.split("/");
      for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
      if (!recursive && parts.length > 1) continue;
      entries.push({
        type: "file",
        oid: f.sha256.slice(0, 40),
        size: f.size,
        path: f.path,
        ...(f.lfs ? { lfs: { oid: f.sha256, size: f.size, pointerSize: 134 } } : {}),
      });
    }
    for (const d of dirs)
      if (recursive || !d.includes("/")) entries.push({ type: "directory", oid: "0".repeat(40), size: 0, path: d });
    return entries;
  }

  private async serveFile(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    log: HubRequestLog,
    org: string,
    repoName: string,
    filePath: string,
    viaResolve: boolean,
  ): Promise<void> {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      log.status = status;
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    };
    const repo = viaResolve ? this.authorized(req, org, repoName, send) : this.repos.get(`${org}/${repoName}`);
    if (!repo) return viaResolve ? undefined : send(404, { error: "Not Found" });
    const file = repo.files.get(filePath);
    log.file = filePath;
    if (!file) return send(404, { error: "Entry not found" }, { "X-Error-Code": "EntryNotFound" });
    const etag = `"${file.lfs ? file.sha256 : file.sha256.slice(0, 40)}"`;
    if (viaResolve && file.lfs) {
      log.status = 302;
      res.writeHead(302, {
        Location: `/cdn/${encodeURIComponent(org)}/${encodeURIComponent(repoName)}/${filePath.split("/").map(encodeURIComponent).join("/")}`,
        "X-Linked-Etag": etag,
        "X-Linked-Size": String(file.size),
        ETag: etag,
      });
      res.end();
      return;
    }
    const fault = this.faults.get(`${org}/${repoName}/${filePath}`);
    const range = fault?.ignoreRange ? null : parseRange(req.headers.range, file.size);
    if (range === "invalid")
      return send(416, { error: "Range Not Satisfiable" }, { "Content-Range": `bytes */${file.size}` });
    const start = range?.start ?? 0,
      end = range?.end ?? file.size - 1;
    log.status = range ? 206 : 200;
    res.writeHead(log.status, {
      "Content-Type": "application/octet-stream",
      "Content-Length": String(end - start + 1),
      "Accept-Ranges": "bytes",
      ETag: etag,
      ...(range ? { "Content-Range": `bytes ${start}-${end}/${file.size}` } : {}),
    });
    if (req.method === "HEAD") return void res.end();
    await this.streamBody(res, log, file, start, end, fault);
  }

  private async streamBody(
    res: http.ServerResponse,
    log: HubRequestLog,
    file: HubFileEntry,
    start: number,
    end: number,
    fault: HubFault | undefined,
  ): Promise<void> {
    const limited =
      fault && (fault.times ?? 1) > 0 && (fault.cutAfterBytes !== undefined || fault.stallAfterBytes !== undefined);
    if (limited) fault.times = (fault.times ?? 1) - 1;
    const limit = limited ? (fault.cutAfterBytes ?? fault.stallAfterBytes)! : Infinity;
    const flipAt = fault?.corrupt ? Math.floor(file.size / 2) : -1;
    // A capped speed is paced per chunk: a tenth of a second's worth each, so even a small file arrives gradually.
    const size = fault?.bytesPerSecond
      ? Math.max(4096, Math.min(1 << 20, Math.floor(fault.bytesPerSecond / 10)))
      : 1 << 20;
    const chunks: AsyncIterable<Buffer> = Buffer.isBuffer(file.source)
      ? (async function* (buf: Buffer) {
          for (let o = start; o <= end; o += size) yield buf.subarray(o, Math.min(o + size, end + 1));
        })(file.source)
      : fs.createReadStream(file.source, { start, end, highWaterMark: size });
    let offset = start;
    const t0 = performance.now();
    for await (const raw of chunks) {
      if (res.destroyed) break;
      let chunk = raw;
      if (flipAt >= offset && flipAt < offset + chunk.length) {
        chunk = Buffer.from(chunk);
        chunk[flipAt - offset] = chunk[flipAt - offset]! ^ 0xff;
      }
      const room = limit - log.bytes;
      if (chunk.length > room) chunk = chunk.subarray(0, room);
      offset += raw.length;
      log.bytes += chunk.length;
      if (chunk.length) res.write(chunk);
      if (log.bytes >= limit) break;
      if (fault?.bytesPerSecond) {
        const ahead = (log.bytes / fault.bytesPerSecond) * 1000 - (performance.now() - t0);
        if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
      }
      // Checked after the pacing sleep: a drain during it must not be waited for again.
      if (res.writableNeedDrain)
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
    }
    if (log.bytes < limit) return void res.end();
    if (fault?.cutAfterBytes !== undefined) {
      // Let the bytes written so far reach the client, then drop the connection mid-body.
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      res.socket?.destroy();
    }
    // A stall keeps the connection open without sending; the client (or close()) ends it.
  }
}

/**
 * Starts the hub on an ephemeral port of `host` (0.0.0.0 lets the test cluster's pods reach it; `url` stays loopback).
 */
export async function startHubServer(opts: { host?: string } = {}): Promise<HubServer> {
  const server = http.createServer();
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, opts.host ?? "127.0.0.1", () => resolve()));
  return new HubServer(server);
}
