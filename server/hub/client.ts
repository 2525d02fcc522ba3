// The Hugging Face hub HTTP protocol, as far as pulls need it: list a repo's files (tree API, with the LFS sha256 of
// each large file), build download URLs (/<org>/<repo>/resolve/<rev>/<file>, which redirects to a CDN), fetch small
// files, and map hub statuses to errors that name the repo and file.
import { z } from "zod";
import { AppError } from "../common/errors.ts";
import { hubRepoLabel, type HubRef } from "../common/hub-ref.ts";
import type { HubFile } from "./ref.ts";

export interface HubClientOptions {
  /** GANTRY_HUB_URL, e.g. https://huggingface.co */
  baseUrl: string;
  /** HF_TOKEN */
  token?: string | undefined;
}

const TreeEntrySchema = z.object({
  type: z.string(),
  path: z.string(),
  size: z.number().int().nonnegative().optional(),
  lfs: z.object({ oid: z.string(), size: z.number().int().nonnegative() }).optional(),
});

const ModelInfoSchema = z.object({
  siblings: z
    .array(
      z.object({
        rfilename: z.string(),
        size: z.number().int().nonnegative().optional(),
        lfs: z.object({ sha256: z.string(), size: z.number().int().nonnegative() }).optional(),
      }),
    )
    .default([]),
});

const SHA256_HEX = /^[0-9a-f]{64}$/;
const MAX_SMALL_FILE = 1 << 20;

/** The AppError for a hub HTTP status; `file` is named when the request was for one file. */
export function hubStatusError(status: number, ref: Pick<HubRef, "org" | "repo">, file?: string): AppError {
  const repo = hubRepoLabel(ref);
  const what = file ? `file ${file} in ${repo}` : `repository ${repo}`;
  if (status === 401)
    return new AppError(
      "UNAUTHORIZED",
      `the hub refused access to ${what} (401): the repository may be private or gated; set HF_TOKEN to a token that can read it`,
    );
  if (status === 403)
    return new AppError(
      "FORBIDDEN",
      `the hub forbids access to ${what} (403): HF_TOKEN lacks permission, or the repository's terms must be accepted on the hub first`,
    );
  if (status === 404)
    return new AppError(
      "MODEL_NOT_FOUND",
      file ? `file ${file} not found in ${repo}` : `repository ${repo} not found on the hub`,
      { param: "model" },
    );
  return new AppError("UPSTREAM_FAILED", `the hub answered ${status} for ${what}`);
}

/** Statuses a download may retry after (the hub or its CDN being briefly unwell). */
export const isRetryableStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** The sha256 an ETag / X-Linked-Etag header carries, when it is one (LFS files). */
export function sha256FromEtag(value: string | null): string | undefined {
  const v = value?.replace(/^W\//, "").replaceAll('"', "").trim().toLowerCase();
  return v && SHA256_HEX.test(v) ? v : undefined;
}

export class HubClient {
  readonly baseUrl: string;
  private readonly token: string | undefined;

  constructor(opts: HubClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
  }

  /** Headers for every hub request. fetch drops Authorization on cross-origin redirects (the CDN needs none). */
  headers(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  fileUrl(ref: HubRef, file: string): string {
    const encoded = file.split("/").map(encodeURIComponent).join("/");
    return `${this.baseUrl}/${encodeURIComponent(ref.org)}/${encodeURIComponent(ref.repo)}/resolve/${encodeURIComponent(ref.revision)}/${encoded}`;
  }

  /** Every file of the repo at the ref's revision, with sizes and LFS sha256s. */
  async listFiles(ref: HubRef, signal?: AbortSignal): Promise<HubFile[]> {
    const repoPath = `${encodeURIComponent(ref.org)}/${encodeURIComponent(ref.repo)}`;
    let url: string | null =
      `${this.baseUrl}/api/models/${repoPath}/tree/${encodeURIComponent(ref.revision)}?recursive=true`;
    const files: HubFile[] = [];
    while (url) {
      const res = await this.get(url, ref, undefined, signal);
      if (!res.ok) {
        // Hubs without the tree API: the model info lists the files (sizes and sha256 only with ?blobs=true).
        if (files.length === 0 && (res.status === 400 || res.status === 405 || res.status === 501))
          return this.listFromModelInfo(ref, repoPath, signal);
        throw hubStatusError(res.status, ref);
      }
      const entries = z.array(TreeEntrySchema).safeParse(await res.json().catch(() => null));
      if (!entries.success)
        throw new AppError("UPSTREAM_FAILED", `the hub sent an unreadable file list for ${hubRepoLabel(ref)}`);
      for (const e of entries.data) {
        if (e.type !== "file") continue;
        const sha = e.lfs && SHA256_HEX.test(e.lfs.oid) ? e.lfs.oid : undefined;
        files.push({ path: e.path, size: e.lfs?.size ?? e.size ?? 0, ...(sha ? { sha256: sha } : {}) });
      }
      url = nextLink(res.headers.get("link"), url);
    }
    return files;
  }

  /** A small repo file (template, system, params) in memory. */
  async fetchSmall(ref: HubRef, file: string, signal?: AbortSignal): Promise<Buffer> {
    const res = await this.get(this.fileUrl(ref, file), ref, file, signal);
    if (!res.ok) throw hubStatusError(res.status, ref, file);
    const body = Buffer.from(await res.arrayBuffer());
    if (body.length > MAX_SMALL_FILE)
      throw new AppError("UPSTREAM_FAILED", `${file} in ${hubRepoLabel(ref)} is larger than ${MAX_SMALL_FILE} bytes`);
    return body;
  }

  /** The sha256 of a file the listing gave none for, from the download's X-Linked-Etag (HEAD, no redirect). */
  async sha256Of(ref: HubRef, file: HubFile, signal?: AbortSignal): Promise<string | undefined> {
    if (file.sha256) return file.sha256;
    const res = await this.get(this.fileUrl(ref, file.path), ref, file.path, signal, "HEAD");
    if (!res.ok && (res.status < 300 || res.status >= 400)) throw hubStatusError(res.status, ref, file.path);
    return sha256FromEtag(res.headers.get("x-linked-etag")) ?? sha256FromEtag(res.headers.get("etag"));
  }

  private async listFromModelInfo(ref: HubRef, repoPath: string, signal?: AbortSignal): Promise<HubFile[]> {
    const res = await this.get(
      `${this.baseUrl}/api/models/${repoPath}/revision/${encodeURIComponent(ref.revision)}?blobs=true`,
      ref,
      undefined,
      signal,
    );
    if (!res.ok) throw hubStatusError(res.status, ref);
    const info = ModelInfoSchema.safeParse(await res.json().catch(() => null));
    if (!info.success)
      throw new AppError("UPSTREAM_FAILED", `the hub sent unreadable model info for ${hubRepoLabel(ref)}`);
    return info.data.siblings.map((s) => ({
      path: s.rfilename,
      size: s.lfs?.size ?? s.size ?? 0,
      ...(s.lfs && SHA256_HEX.test(s.lfs.sha256) ? { sha256: s.lfs.sha256 } : {}),
    }));
  }

  private async get(
    url: string,
    ref: HubRef,
    file: string | undefined,
    signal?: AbortSignal,
    method = "GET",
  ): Promise<Response> {
    try {
      return await fetch(url, {
        method,
        headers: this.headers(),
        redirect: method === "HEAD" ? "manual" : "follow",
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (signal?.aborted) throw e;
      const target = file ? `${file} in ${hubRepoLabel(ref)}` : hubRepoLabel(ref);
      throw new AppError(
        "UPSTREAM_FAILED",
        `cannot reach the hub at ${this.baseUrl} for ${target}: ${(e as Error).cause ?? (e as Error).message}`,
        { cause: e },
      );
    }
  }
}

/** The rel="next" URL of a Link header (the tree API paginates large repos), resolved against the current URL. */
export function nextLink(header: string | null, current: string): string | null {
  if (!header) return null;
  for (const part of header.split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m) return new URL(m[1]!, current).toString();
  }
  return null;
}
