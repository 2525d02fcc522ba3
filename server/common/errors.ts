// Typed application errors. Domain code throws these; each HTTP app maps them to its wire shape in exactly one place
// (Ollama `{"error": "..."}` on /api, the OpenAI envelope on /v1). `status` lives on the error, never in handlers.
// `fault: true` marks the codes that mean the server failed (logged as errors); other 5xx codes are the server working
// as designed (busy, loading, shutting down, not implemented) and are not.

export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, type: "invalid_request_error" },
  INVALID_JSON: { status: 400, type: "invalid_request_error" },
  UNSUPPORTED_FIELD: { status: 400, type: "invalid_request_error" },
  CONTEXT_OVERFLOW: { status: 400, type: "invalid_request_error", openaiCode: "context_length_exceeded" },
  STORE_INVALID_DIGEST: { status: 400, type: "invalid_request_error" },
  STORE_DIGEST_MISMATCH: { status: 400, type: "invalid_request_error" },
  MODEL_INVALID_NAME: { status: 400, type: "invalid_request_error" },
  MODEL_INVALID_FILE: { status: 400, type: "invalid_request_error" },
  MODELFILE_SYNTAX: { status: 400, type: "invalid_request_error" },
  TEMPLATE_ERROR: { status: 400, type: "invalid_request_error" },
  UNAUTHORIZED: { status: 401, type: "authentication_error" },
  FORBIDDEN: { status: 403, type: "permission_error" },
  MODEL_NOT_FOUND: { status: 404, type: "not_found_error" },
  BLOB_NOT_FOUND: { status: 404, type: "not_found_error" },
  NOT_FOUND: { status: 404, type: "not_found_error" },
  METHOD_NOT_ALLOWED: { status: 405, type: "invalid_request_error" },
  REQUEST_TIMEOUT: { status: 408, type: "invalid_request_error" },
  CONFLICT: { status: 409, type: "invalid_request_error" },
  PAYLOAD_TOO_LARGE: { status: 413, type: "invalid_request_error" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, type: "invalid_request_error" },
  HEADERS_TOO_LARGE: { status: 431, type: "invalid_request_error" },
  RATE_LIMITED: { status: 429, type: "rate_limit_error" },
  TOO_MANY_HELD: { status: 429, type: "rate_limit_error" },
  CLIENT_CLOSED: { status: 499, type: "client_closed" },
  INTERNAL: { status: 500, type: "server_error", fault: true },
  NOT_IMPLEMENTED: { status: 501, type: "invalid_request_error" },
  MODEL_LOAD_FAILED: { status: 500, type: "server_error", fault: true },
  UPSTREAM_FAILED: { status: 502, type: "server_error", fault: true },
  SERVER_BUSY: { status: 503, type: "server_busy" },
  MODEL_LOADING: { status: 503, type: "unavailable_error" },
  SHUTTING_DOWN: { status: 503, type: "unavailable_error" },
  APP_UNAVAILABLE: { status: 503, type: "unavailable_error", fault: true },
  WARMUP_TIMEOUT: { status: 503, type: "unavailable_error", fault: true },
  UPSTREAM_TIMEOUT: { status: 504, type: "server_error", fault: true },
} as const satisfies Record<string, { status: number; type: string; fault?: true; openaiCode?: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether an error of this code is a server fault: logged at error level wherever it is answered. */
export const isServerFault = (code: ErrorCode): boolean => (ERROR_CODES[code] as { fault?: true }).fault === true;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Parameter the error is about (OpenAI `param`), when there is one. */
  readonly param: string | null;
  /** Extra response headers, e.g. Retry-After for SERVER_BUSY. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }

  /** Messages of 5xx errors are not shown to clients unless the error was raised deliberately with a safe text. */
  get expose(): boolean {
    return this.status < 500 || this.code !== "INTERNAL";
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** Turns anything thrown into an AppError; unknown errors become INTERNAL with a generic message. */
export function toAppError(e: unknown): AppError {
  if (isAppError(e)) return e;
  return new AppError("INTERNAL", "internal server error", { cause: e });
}

export const badRequest = (message: string, param?: string) =>
  new AppError("BAD_REQUEST", message, { param: param ?? null });
export const modelNotFound = (name: string) =>
  new AppError("MODEL_NOT_FOUND", `model "${name}" not found, try pulling it first`, { param: "model" });

/** Ollama wire body: `{"error": "..."}`. */
export function ollamaErrorBody(e: AppError): { error: string } {
  return { error: e.expose ? e.message : "internal server error" };
}

const openaiCodeOf = (code: ErrorCode): string => {
  const def: { status: number; openaiCode?: string } = ERROR_CODES[code];
  return def.openaiCode ?? code.toLowerCase();
};

/** OpenAI wire body: `{"error": {"message", "type", "param", "code"}}`. */
export function openaiErrorBody(e: AppError): {
  error: { message: string; type: string; param: string | null; code: string | null };
} {
  return {
    error: {
      message: e.expose ? e.message : "internal server error",
      type: ERROR_CODES[e.code].type,
      param: e.param,
      // OpenAI's own code where it has one (context_length_exceeded), else ours.
      code: openaiCodeOf(e.code),
    },
  };
}

/**
 * Anthropic's error type for a status (docs.anthropic.com "Errors"): what its SDKs turn into their error classes. A
 * full queue is `overloaded_error` (Anthropic's 529), a gateway timeout `timeout_error`, any other 5xx `api_error`.
 */
export function anthropicErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 402) return "billing_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503 || status === 529) return "overloaded_error";
  if (status === 504) return "timeout_error";
  return status >= 500 ? "api_error" : "invalid_request_error";
}

/** Anthropic wire body: `{"type": "error", "error": {"type", "message"}}`. */
export function anthropicErrorBody(e: AppError): { type: "error"; error: { type: string; message: string } } {
  return {
    type: "error",
    error: { type: anthropicErrorType(e.status), message: e.expose ? e.message : "internal server error" },
  };
}

/** Maps body-parser and router failures (invalid JSON, body too large, a URL that does not decode) to AppErrors. */
export function fromBodyParserError(err: unknown): AppError | undefined {
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === "entity.parse.failed")
    return new AppError("INVALID_JSON", `invalid JSON body: ${e.message ?? "parse error"}`);
  if (e?.type === "entity.too.large")
    return new AppError("PAYLOAD_TOO_LARGE", "request body is larger than the server accepts");
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported")
    return new AppError("UNSUPPORTED_MEDIA_TYPE", e.message ?? "unsupported encoding");
  if (e?.type === "request.aborted") return new AppError("CLIENT_CLOSED", "client closed the request");
  // A path parameter that does not percent-decode (e.g. /v1/models/%ff): the router's URIError, marked 400.
  if (err instanceof URIError && e.status === 400) return new AppError("BAD_REQUEST", e.message ?? "malformed URL");
  // A body whose Content-Encoding does not decode: zlib (Z_*), zstd (ZSTD_*) and brotli (ERR__*) errors, given a 400.
  const code = (err as { code?: unknown } | null)?.code;
  if (e?.status === 400 && typeof code === "string" && /^(Z_|ZSTD_|ERR__)/.test(code))
    return new AppError(
      "BAD_REQUEST",
      `could not decompress the request body (check its Content-Encoding): ${e.message ?? code}`,
    );
  return undefined;
}
