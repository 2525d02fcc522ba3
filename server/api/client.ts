// A typed client of Gantry's Ollama-compatible API (/api/*): plain fetch, NDJSON streams as async iterators, and
// typed errors that carry the HTTP status and the server's own message. The CLI uses nothing else to reach a server.
import fs from "node:fs";
import { Readable } from "node:stream";
import type { z } from "zod";
import type { ChatRequestSchema, GenerateRequestSchema } from "./schemas.ts";
import type { CreateRequest as StoreCreateRequest, Progress, ShowResponse, TagsResponse } from "./store-schemas.ts";

/** The server answered with an error (HTTP status ≥ 400, or an `{"error"}` line inside a stream). */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/** No server answered at the address (connection refused, DNS failure, reset before a response). */
export class ServerUnreachableError extends Error {
  readonly url: string;
  constructor(url: string, cause: unknown) {
    super(`could not connect to the gantry server at ${url}: is it running? (start it with "gantry serve")`, { cause });
    this.name = "ServerUnreachableError";
    this.url = url;
  }
}

export type GenerateRequest = z.input<typeof GenerateRequestSchema>;
export type ChatRequest = z.input<typeof ChatRequestSchema>;
/** /api/create body (`stream` is set by the client). */
export type CreateRequest = Omit<StoreCreateRequest, "stream">;
/** /api/pull body. */
export interface PullRequest {
  model: string;
  insecure?: boolean;
}
export type ChatMessage = NonNullable<ChatRequest["messages"]>[number];

interface DoneMetrics {
  done_reason?: string;
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
  eval_count?: number;
  eval_duration?: number;
}

export interface GenerateChunk extends DoneMetrics {
  model: string;
  response: string;
  thinking?: string;
  done: boolean;
}

export interface ChatChunk extends DoneMetrics {
  model: string;
  message?: { role: string; content: string; thinking?: string };
  done: boolean;
}

export interface RunningModel {
  name: string;
  model: string;
  size: number;
  digest: string;
  expires_at: string;
  size_vram: number;
  context_length: number;
  /** Gantry's: the KV cache (its bytes are part of `size`). */
  kv_cache?: { type: string; flash_attention: string; size: number };
}

/** Splits a byte stream into parsed JSON lines; an `{"error": …}` line becomes an ApiError. */
export async function* readNdjson<T>(body: AsyncIterable<Uint8Array>, status = 200): AsyncGenerator<T> {
  const decoder = new TextDecoder();
  let buffered = "";
  const parse = (line: string): T => {
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      throw new ApiError(status, `the server sent an invalid stream line: ${line.slice(0, 200)}`);
    }
    if (obj && typeof obj === "object" && "error" in obj && typeof obj.error === "string")
      throw new ApiError(status, obj.error);
    return obj as T;
  };
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) yield parse(line);
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield parse(buffered.trim());
}

/** The server's error text from a failed response: `{"error": "…"}` (Ollama) or `{"error": {"message"}}` (OpenAI). */
async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  let message = text.trim();
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") message = body.error;
    else if (body.error && typeof body.error === "object" && "message" in body.error)
      message = String(body.error.message);
  } catch {
    /* not JSON: keep the text */
  }
  return new ApiError(res.status, message || `${res.status} ${res.statusText}`);
}

export interface ClientOptions {
  fetch?: typeof fetch;
}

export class GantryClient {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(baseUrl: string, opts: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.fetchImpl = opts.fetch ?? fetch;
  }

  private async request(
    method: string,
    path: string,
    init: { json?: unknown; body?: RequestInit["body"]; signal?: AbortSignal; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const url = `${this.baseUrl}${path}`;
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method,
        headers: { ...(init.json !== undefined ? { "Content-Type": "application/json" } : {}), ...init.headers },
        body: init.json !== undefined ? JSON.stringify(init.json) : (init.body ?? null),
        signal: init.signal ?? null,
        // Node's fetch needs this to stream a request body (blob uploads).
        ...(init.body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
    } catch (e) {
      if (init.signal?.aborted) throw e;
      throw new ServerUnreachableError(this.baseUrl, e);
    }
    if (!res.ok && method !== "HEAD") throw await errorFrom(res);
    return res;
  }

  private async json<T>(method: string, path: string, json?: unknown): Promise<T> {
    const res = await this.request(method, path, json === undefined ? {} : { json });
    return (await res.json()) as T;
  }

  private async *stream<T>(path: string, json: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const res = await this.request("POST", path, { json, ...(signal ? { signal } : {}) });
    if (!res.body) return;
    try {
      yield* readNdjson<T>(res.body, res.status);
    } catch (e) {
      if (e instanceof ApiError || signal?.aborted) throw e;
      // undici reports a dropped connection as "terminated": say what happened instead.
      throw new Error(`the server at ${this.baseUrl} closed the connection before the response was complete`, {
        cause: e,
      });
    }
  }

  /** `version`: the Ollama API level the server speaks; `gantry`: a Gantry server's own version. */
  version(): Promise<{ version: string; gantry?: string }> {
    return this.json("GET", "/api/version");
  }
  list(): Promise<TagsResponse> {
    return this.json("GET", "/api/tags");
  }
  ps(): Promise<{ models: RunningModel[] }> {
    return this.json("GET", "/api/ps");
  }
  show(model: string): Promise<ShowResponse> {
    return this.json("POST", "/api/show", { model });
  }
  async delete(model: string): Promise<void> {
    await this.request("DELETE", "/api/delete", { json: { model } });
  }
  async copy(source: string, destination: string): Promise<void> {
    await this.request("POST", "/api/copy", { json: { source, destination } });
  }

  generate(req: GenerateRequest, signal?: AbortSignal): AsyncGenerator<GenerateChunk> {
    return this.stream("/api/generate", { ...req, stream: true }, signal);
  }
  chat(req: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatChunk> {
    return this.stream("/api/chat", { ...req, stream: true }, signal);
  }
  create(req: CreateRequest, signal?: AbortSignal): AsyncGenerator<Progress> {
    return this.stream("/api/create", { ...req, stream: true }, signal);
  }
  pull(req: PullRequest, signal?: AbortSignal): AsyncGenerator<Progress> {
    return this.stream("/api/pull", { ...req, stream: true }, signal);
  }

  /** Whether the server already holds the blob `sha256:<hex>`. */
  async hasBlob(digest: string): Promise<boolean> {
    const res = await this.request("HEAD", `/api/blobs/${digest}`);
    if (res.status === 200) return true;
    if (res.status === 404) return false;
    throw new ApiError(res.status, `checking blob ${digest} failed: ${res.status} ${res.statusText}`);
  }

  /** Streams a local file to the server as the blob `digest`; the server verifies the digest. */
  async uploadBlob(digest: string, file: string): Promise<void> {
    const body = Readable.toWeb(fs.createReadStream(file)) as ReadableStream<Uint8Array>;
    await this.request("POST", `/api/blobs/${digest}`, {
      body,
      headers: { "Content-Type": "application/octet-stream" },
    });
  }
}
