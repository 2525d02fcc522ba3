// The route table: every API route of an app the gateway passes to its pods, and everything the gateway does for it —
// methods, body, how its answer streams and what a held stream gets as keep-alive while the app scales from zero,
// where PrefixHash reads a conversation's start, usage injection, the error shape and whether it may be queued. The
// steps of a request (1-dispatch … 5-account) read this table and nothing else about routes. Pure.
import type { ErrorShape } from "./errors.ts";

/**
 * How an answer streams: SSE when the body says `"stream": true` (OpenAI, Anthropic), NDJSON unless it says
 * `"stream": false` (Ollama).
 */
export type StreamStyle = { kind: "sse"; when: "stream-true" } | { kind: "ndjson"; when: "unless-stream-false" };

/** Where PrefixHash finds a conversation's start: a lead text (system), a message list, a plain prompt. */
export interface PrefixFields {
  lead?: string;
  list?: string;
  text?: string;
}

export interface ApiRoute {
  /** The path under /<org>/<app>; an `under` route matches the paths below it (`/v1/models/{id}`). */
  path: string;
  under?: true;
  /** Methods a caller may use (HEAD wherever GET is). */
  methods: readonly ("GET" | "POST")[];
  /** "json": a JSON body read whole (up to the gateway's maxBodyBytes), parsed once; "none": no body forwarded. */
  body: "json" | "none";
  /** Ollama's `keep_alive` is taken out of the body: the app's spec says how long its model stays loaded. */
  dropsKeepAlive?: true;
  /** Its answer streams (and so a held request gets keep-alive lines while the app scales from zero). */
  stream?: StreamStyle;
  /** A held NDJSON stream's keep-alive line: an empty piece of the answer every Ollama client appends as nothing. */
  ndjsonKeepAlive?: (model: string, at: string) => string;
  /** Where PrefixHash's key is read; none: the route goes by load even on a PrefixHash app. */
  prefixHash?: PrefixFields;
  /** A streamed request gets `stream_options.include_usage`, to meter its tokens (taken out again for the client). */
  addsStreamUsage?: true;
  /** Token counts are read from the answer. */
  metered: boolean;
  /** The API's error shape (also of the error event that ends a started stream). */
  shape: ErrorShape;
  /** Whether the request may wait in a queue for a pod (generation and embeddings; not listings or model info). */
  queueable: boolean;
}

const chatLine = (model: string, at: string) =>
  `${JSON.stringify({ model, created_at: at, message: { role: "assistant", content: "" }, done: false })}\n`;
const generateLine = (model: string, at: string) =>
  `${JSON.stringify({ model, created_at: at, response: "", done: false })}\n`;

const SSE: StreamStyle = { kind: "sse", when: "stream-true" };
const NDJSON: StreamStyle = { kind: "ndjson", when: "unless-stream-false" };
const get = { methods: ["GET"], body: "none", metered: false, queueable: false } as const;
const post = { methods: ["POST"], body: "json", metered: true } as const;

export const API_ROUTES: readonly ApiRoute[] = [
  { path: "/v1/models", ...get, shape: "openai" },
  { path: "/v1/models/", under: true, ...get, shape: "openai" },
  {
    path: "/v1/chat/completions",
    ...post,
    stream: SSE,
    prefixHash: { list: "messages" },
    addsStreamUsage: true,
    shape: "openai",
    queueable: true,
  },
  {
    path: "/v1/completions",
    ...post,
    stream: SSE,
    prefixHash: { text: "prompt" },
    addsStreamUsage: true,
    shape: "openai",
    queueable: true,
  },
  { path: "/v1/embeddings", ...post, shape: "openai", queueable: true },
  { path: "/v1/rerank", ...post, shape: "openai", queueable: true },
  { path: "/v1/reranking", ...post, shape: "openai", queueable: true },
  {
    path: "/v1/responses",
    ...post,
    stream: SSE,
    prefixHash: { lead: "instructions", list: "input" },
    shape: "openai",
    queueable: true,
  },
  {
    path: "/v1/messages",
    ...post,
    stream: SSE,
    prefixHash: { lead: "system", list: "messages" },
    shape: "anthropic",
    queueable: true,
  },
  // Its answer is a count, not usage: nothing to meter.
  { path: "/v1/messages/count_tokens", ...post, metered: false, shape: "anthropic", queueable: false },
  {
    path: "/api/chat",
    ...post,
    dropsKeepAlive: true,
    stream: NDJSON,
    ndjsonKeepAlive: chatLine,
    prefixHash: { list: "messages" },
    shape: "ollama",
    queueable: true,
  },
  {
    path: "/api/generate",
    ...post,
    dropsKeepAlive: true,
    stream: NDJSON,
    ndjsonKeepAlive: generateLine,
    prefixHash: { lead: "system", text: "prompt" },
    shape: "ollama",
    queueable: true,
  },
  { path: "/api/embed", ...post, dropsKeepAlive: true, shape: "ollama", queueable: true },
  // Ollama's legacy embeddings answer carries no counts.
  { path: "/api/embeddings", ...post, metered: false, dropsKeepAlive: true, shape: "ollama", queueable: true },
  { path: "/api/rerank", ...post, dropsKeepAlive: true, shape: "ollama", queueable: true },
  { path: "/api/show", ...post, metered: false, shape: "ollama", queueable: false },
  { path: "/api/tags", ...get, shape: "ollama" },
  { path: "/api/ps", ...get, shape: "ollama" },
  { path: "/api/version", ...get, shape: "ollama" },
];

const EXACT = new Map(API_ROUTES.filter((r) => !r.under).map((r) => [r.path, r]));
const PREFIXED = API_ROUTES.filter((r) => r.under);

/** The route of a path under an app, or undefined when the gateway does not pass it on. */
export function apiRoute(rest: string): ApiRoute | undefined {
  return EXACT.get(rest) ?? PREFIXED.find((r) => rest.startsWith(r.path) && rest.length > r.path.length);
}

/** Routes that change a pod's model store: never reachable through the gateway (403). */
export const STORE_ROUTES = ["/api/pull", "/api/create", "/api/delete", "/api/copy", "/api/blobs", "/api/push"];

/**
 * How deep a request body may nest objects and arrays: a JSON schema (a tool's parameters, a response format) may nest
 * 100 levels at the model server (common/json-schema-check.ts), inside a few levels of the request around it.
 */
export const MAX_BODY_DEPTH = 128;
