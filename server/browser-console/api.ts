// The management API as the console calls it: same-origin fetches with the session cookie (HttpOnly: the page never
// sees it), the CSRF token on every change, and errors turned into sentences (the API's own message, never raw JSON).

export const API = "/_gantry/v1";

export class ApiError extends Error {
  readonly status: number;
  readonly param: string | null;
  constructor(status: number, message: string, param: string | null = null) {
    super(message);
    this.status = status;
    this.param = param;
  }
}

export interface Session {
  org: string;
  keyId: string;
  keyName: string;
  csrfToken: string;
  created: string;
  expires: string;
  idleTimeoutSeconds: number;
}

let csrf = "";
let onSignedOut: (message: string) => void = () => undefined;

export function useSession(s: Session | undefined, signedOut: (message: string) => void): void {
  csrf = s?.csrfToken ?? "";
  onSignedOut = signedOut;
}

/** The API's error in words: its message, else what the status means. */
async function errorOf(res: Response): Promise<ApiError> {
  let message = "";
  let param: string | null = null;
  try {
    const body = (await res.json()) as { error?: { message?: string; param?: string | null } | string };
    if (typeof body.error === "string") message = body.error;
    else if (body.error?.message) {
      message = body.error.message;
      param = body.error.param ?? null;
    }
  } catch {
    // not JSON: say what the status means
  }
  if (!message)
    message =
      res.status >= 500
        ? `the gateway answered ${res.status} ${res.statusText}: try again in a moment`
        : `the request failed (${res.status} ${res.statusText})`;
  return new ApiError(res.status, message, param);
}

/** A request to the management API; JSON in and out. A 401 of a signed-in page ends the session in the page. */
export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  opts: { signal?: AbortSignal; raw?: boolean } = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrf) headers["x-csrf-token"] = csrf;
  let res: Response;
  try {
    res = await fetch(path.startsWith("/") ? path : `${API}/${path}`, {
      method,
      headers,
      credentials: "same-origin",
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (e) {
    if ((e as Error).name === "AbortError") throw e;
    throw new ApiError(0, "cannot reach the gateway: check your connection");
  }
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && !path.endsWith("session")) onSignedOut(err.message);
    throw err;
  }
  if (opts.raw) return res as unknown as T;
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) =>
  request<T>("GET", path, undefined, signal ? { signal } : {});

/** The org's routes: /_gantry/v1/orgs/<org>/... */
export const orgPath = (org: string, rest: string) => `orgs/${encodeURIComponent(org)}/${rest}`;

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

export interface AppView {
  org: string;
  name: string;
  auth: string;
  model?: string;
  servedModel?: string;
  url?: string;
  /** fal's queue API for the app, when the gateway has a broker. */
  queueUrl?: string;
  ready?: { status: string; reason: string; message: string };
  replicas?: number;
  readyReplicas?: number;
  minReplicas?: number;
  maxReplicas?: number;
  conditions?: Condition[];
  deleting?: true;
}

export interface KeyView {
  id: string;
  org: string;
  scope: "api" | "admin";
  name: string;
  created: string;
  expires?: string;
  expired?: true;
  lastUsed?: string;
}

export type { UsageRow } from "./usage-data.ts";

/** The app's URL as users reach it: the one the API reports, else this gateway's. */
export const appUrl = (a: AppView): string => a.url ?? `${location.origin}/${a.org}/${a.name}`;

/** The lines of a streamed answer as they arrive (trimmed, empty ones left out). */
export async function* lines(res: Response): AsyncGenerator<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) yield line;
    }
  }
}

/** The objects of an NDJSON answer as they arrive. */
export async function* ndjson<T>(res: Response): AsyncGenerator<T> {
  for await (const line of lines(res)) yield JSON.parse(line) as T;
}
