// Shared bits of the hub pull tests: a fresh store per test, file digests, fast fault-detection settings.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Progress } from "../../../server/api/store-schemas.ts";
import type { DownloadTuning } from "../../../server/hub/download.ts";
import { ModelStore } from "../../../server/store/model-store.ts";

/** Stalls are noticed after 1 s, retries start after 50 ms. */
export const FAST: Partial<DownloadTuning> = { stallMs: 1000, backoffMs: 50, maxAttempts: 4 };

export function tempStore(): ModelStore {
  return new ModelStore({ root: fs.mkdtempSync(path.join(os.tmpdir(), "gantry-hub-store-")) });
}

export async function sha256File(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** Collects progress lines. */
export function progressLog(): { lines: Progress[]; push: (p: Progress) => void } {
  const lines: Progress[] = [];
  return { lines, push: (p) => lines.push(p) };
}

/** Files in the store's blobs/ directory. */
export const blobFiles = (store: ModelStore): string[] =>
  fs.existsSync(store.blobs.dir) ? fs.readdirSync(store.blobs.dir).sort() : [];
